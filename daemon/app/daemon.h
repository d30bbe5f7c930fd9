// Wires discovery, collectors and the HTTP endpoint together and runs the event loop:
// exec/exit events, periodic scans, SIGHUP reloads, SIGTERM/SIGINT shutdown.
#pragma once

#include <optional>
#include <string>

#include "config/config.h"

namespace cephscope {

struct Overrides {
  std::optional<std::string> listen;
  std::optional<std::string> log_level;
  std::optional<std::string> web_config_file;
};

// Applies flag overrides on top of a loaded config.
void apply_overrides(Config& config, const Overrides& overrides);

// Runs until SIGTERM/SIGINT; returns the process exit status.
int run_daemon(const std::string& config_path, Config config, const Overrides& overrides);

// --check: probes the kernel, loads every collector, prints what works and exits.
int run_check(const Config& config);

}  // namespace cephscope
