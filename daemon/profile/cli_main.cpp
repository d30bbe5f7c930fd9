// cephscope-profile-cli: the daemon's `profile` command as a standalone tool, for tests and
// for hosts where only profiles are wanted.
#include <CLI/CLI.hpp>

#include "profile/cli.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  try {
    CLI::App app{"cephscope probe profiles"};
    app.require_subcommand(1);
    cephscope::profile::add_profile_commands(app);
    CLI11_PARSE(app, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cephscope-profile-cli: %s\n", e.what());
    return 1;
  }
  return 0;
}
