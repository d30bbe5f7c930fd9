// The Catch2 session of tests/catch_impl.cpp (Catch::Session is declared only where Catch2's
// implementation is compiled): a main() of its own calls this once it decides to run the tests.
#pragma once

int run_catch_session(int argc, char** argv);
