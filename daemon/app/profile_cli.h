// The `profile` command of the cephscope CLI:
//   cephscope profile generate --binary PATH [--debug-file PATH] [--probe-set SET] --out FILE
//   cephscope profile show FILE
//   cephscope profile show --pid PID [--module NAME]
//   cephscope profile probes [--markdown]
// generate runs the resolver process, as the daemon does (profile/resolver_process.h).
// The work runs in the subcommand callbacks, during parsing; main() then returns when
// app.got_subcommand("profile").
#pragma once

#include <CLI/CLI.hpp>

namespace cephscope::profile {

// Adds the "profile" subcommand (and its own subcommands) to APP. Failures are reported on
// stderr and end parsing with CLI::RuntimeError (exit status 1).
CLI::App* add_profile_commands(CLI::App& app);

}  // namespace cephscope::profile
