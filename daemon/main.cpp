// cephscope: per-stage latency of Ceph, from eBPF, on Prometheus /metrics.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "app/daemon.h"
#include "app/profile_cli.h"
#include "config/config.h"
#include "server/web_config.h"

namespace {

int run(int argc, char** argv) {
  using namespace cephscope;
  spdlog::set_default_logger(spdlog::stderr_color_mt("cephscope"));  // stdout is for --check
  CLI::App app{"cephscope: Ceph stage latency from eBPF, served on Prometheus /metrics"};
  std::string config_path = "/etc/cephscope/cephscope.yaml";
  Overrides overrides;
  bool check = false;
  app.add_option("-c,--config", config_path, "YAML config file")->capture_default_str();
  app.add_option("--listen", overrides.listen,
                 "HOST:PORT to serve /metrics on (overrides the config)");
  app.add_option("--log-level", overrides.log_level,
                 "trace, debug, info, warn, error (overrides the config)");
  app.add_option("--web.config.file", overrides.web_config_file,
                 "TLS and basic auth for the endpoint, in the Prometheus exporter toolkit's "
                 "format (overrides the config's web_config_file)");
  app.add_flag("--check", check,
               "Validate the config, probe the kernel, print what will work, and exit");
  CLI::App* profile_command = profile::add_profile_commands(app);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand(profile_command)) {
    return 0;  // the profile command did its work during parsing
  }

  auto config = load_config(config_path);
  if (!config.ok()) {
    std::cerr << "cephscope: " << config.error().message << "\n";
    return 2;
  }
  apply_overrides(*config, overrides);
  if (auto level = spdlog::level::from_str(config->log_level);
      level == spdlog::level::off && config->log_level != "off") {
    std::cerr << "cephscope: --log-level: unknown level '" << config->log_level << "'\n";
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  if (auto web = load_web_config(config->web_config_file); !web.ok()) {
    std::cerr << "cephscope: " << web.error().message << "\n";
    return 2;
  }
  return check ? run_check(*config) : run_daemon(config_path, *config, overrides);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // fatal start-up errors only: everything else is a value
    std::cerr << "cephscope: " << e.what() << "\n";
    return 1;
  }
}
