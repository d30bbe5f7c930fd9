// cephscope: per-stage latency of Ceph, from eBPF, on Prometheus /metrics.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <bpf/libbpf.h>

#include <iostream>
#include <string>

#include "app/daemon.h"
#include "app/log_format.h"
#include "app/profile_cli.h"
#include "config/config.h"
#include "core/build_info.h"
#include "endpoint/web_config.h"

namespace {

#if defined(__x86_64__)
constexpr const char* kPlatform = "amd64";
#elif defined(__aarch64__)
constexpr const char* kPlatform = "arm64";
#else
constexpr const char* kPlatform = "other";
#endif
#if defined(__clang__)
constexpr const char* kCompiler = "";  // clang's __VERSION__ names itself
#else
constexpr const char* kCompiler = "gcc ";
#endif

// --version, as Prometheus exporters print it.
std::string version_text() {
  const auto& info = cephscope::build_info();
  return std::string("cephscope, version ") + info.version + " (revision: " + info.revision +
         ")\n  build date: " + info.build_date +
         "\n  libbpf: " + std::to_string(libbpf_major_version()) + "." +
         std::to_string(libbpf_minor_version()) + "\n  compiler: " + kCompiler + __VERSION__ +
         "\n  platform: linux/" + kPlatform;
}

int run(int argc, char** argv) {
  using namespace cephscope;
  spdlog::set_default_logger(spdlog::stderr_color_mt("cephscope"));  // stdout is for --check
  CLI::App app{"cephscope: Ceph stage latency from eBPF, served on Prometheus /metrics"};
  std::string config_path = "/etc/cephscope/cephscope.yaml";
  std::string log_format = "logfmt";
  Overrides overrides;
  bool check = false;
  // The flags as Prometheus exporters spell them; the older names stay as aliases.
  app.add_option("--config.file,-c,--config", config_path, "YAML config file")
      ->capture_default_str();
  app.add_flag("--config.check,--check", check,
               "Validate the config, probe the kernel, print what will work, and exit");
  app.add_option("--web.listen-address,--listen", overrides.listen,
                 "HOST:PORT to serve /metrics on (overrides the config's listen)");
  app.add_option("--web.config.file", overrides.web_config_file,
                 "TLS and basic auth for the endpoint, in the Prometheus exporter toolkit's "
                 "format (overrides the config's web_config_file)");
  app.add_option("--log.level,--log-level", overrides.log_level,
                 "debug, info, warn, error; also trace, critical, off (overrides the config)");
  app.add_option("--log.format", log_format, "logfmt or json")
      ->check(CLI::IsMember({"logfmt", "json"}))
      ->capture_default_str();
  app.set_version_flag("--version", version_text());
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
  spdlog::default_logger()->set_formatter(make_log_formatter(*parse_log_format(log_format)));
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
