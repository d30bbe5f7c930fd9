// Catch2's own implementation, compiled once per tree: every test program links it, through
// catch2_main (a plain main()) or a layer's own main() that skips without root.
#define CATCH_CONFIG_RUNNER
#include "catch_session.h"

#include <catch2/catch.hpp>

int run_catch_session(int argc, char** argv) {
  return Catch::Session().run(argc, argv);
}
