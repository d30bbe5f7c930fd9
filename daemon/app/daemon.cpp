#include "app/daemon.h"

#include <unistd.h>

#include <linux/capability.h>
#include <sys/epoll.h>

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>

#include "app/endpoint_routes.h"
#include "app/event_fds.h"
#include "app/privileges.h"
#include "app/service_notify.h"
#include "app/target_sync.h"
#include "app/usdt_check.h"
#include "collectors/collector.h"
#include "collectors/osd/osd_bluestore.h"
#include "collectors/osd/osd_detail_control.h"
#include "collectors/osd/osd_probes.h"
#include "collectors/slow_ops.h"
#include "discovery/discovery.h"
#include "discovery/process_events.h"
#include "libbpf/features.h"
#include "libbpf/libbpf_log.h"
#include "libbpf/tracefs.h"
#include "metrics/exporter.h"
#include "metrics/otlp_exporter.h"
#include "profile/process.h"
#include "profile/store.h"
#include "server/http_server.h"

namespace cephscope {
namespace {

struct Kernel {
  std::string tracefs_dir;
  KernelFeatures features;
};

// Never fails: what the kernel lacks is reported by each feature, and collectors that need
// it say so.
Kernel prepare_kernel(const Config& config) {
  route_libbpf_log_to_spdlog();
  auto tracefs = ensure_tracefs(config.mount_tracefs);
  if (!tracefs.ok()) {
    spdlog::warn("{}", tracefs.error().message);
  }
  Kernel k{tracefs.ok() ? *tracefs : std::string(kTracefsDir), {}};
  k.features = KernelFeatures::probe(k.tracefs_dir);
  return k;
}

// Start-up is over once the kernel is prepared: what only it needed goes, before any thread
// starts (capabilities are per thread) and before the first target's files are read.
CapabilityMask capabilities_to_keep() {
  CapabilityMask keep = running_set();
  if (perf_events_need_sys_admin()) {
    keep |= capability_bit(CAP_SYS_ADMIN);
  }
  return keep;
}

std::string describe(const Feature& f) {
  return f.available ? "yes"
                     : "no (" + std::string(to_string(f.why.reason)) + ": " + f.why.detail + ")";
}

// Each ceph-osd on the host, with the stored profile its build gets (no resolve here): an
// operator sees before starting the daemon which builds need their debug symbols.
void check_osds(const Config& config) {
  const ProcReader proc;
  const Classifier classifier(proc, config.discovery);
  auto pids = proc.list_pids();
  if (!pids.ok()) {
    std::cout << "osd targets: not listed (" << pids.error().message << ")\n";
    return;
  }
  profile::StoreOptions options;
  options.cache_dir = config.profiles.cache_dir;
  options.shipped_dirs = config.profiles.shipped_dirs;
  options.resolve = false;
  options.write_cache = false;
  profile::ProfileStore store(options);
  store.load_shipped();
  const auto set = osd::probe_set();
  const auto store_set = osd::store_probe_set();
  for (pid_t pid : *pids) {
    auto info = proc.read(pid);
    auto identity = info.ok() ? classifier.classify(*info) : std::nullopt;
    if (!identity || identity->kind != TargetKind::kCephOsd) {
      continue;
    }
    std::cout << "osd target=" << identity->ceph_daemon << " pid=" << pid;
    auto module = profile::identify_module(pid, "");
    if (!module.ok()) {
      std::cout << " reason=binary_refused detail=\"" << module.error().message << "\"\n";
      continue;
    }
    std::cout << " build_id=" << module->build_id;
    // The bluestore layer's set first: its own profile (none: resolved at attach, like the
    // stages').
    auto store_loaded = store.for_module(*module, store_set);
    std::cout << " bluestore_profile="
              << (store_loaded.ok() ? std::string(profile::to_string(store_loaded->origin))
                                    : std::string("none"));
    auto loaded = store.for_module(*module, set);
    if (loaded.ok()) {
      std::cout << " profile=" << profile::to_string(loaded->origin)
                << " source=" << loaded->profile.source << "\n";
      continue;
    }
    // The daemon resolves it from the debug symbols, where they are; where none are, the
    // stages that read members say no_debuginfo.
    std::cout << " profile=none detail=\"no shipped or cached profile: the daemon resolves it "
                 "from this build's debug symbols; without them its stages report no_debuginfo. "
                 "Install "
              << osd::debug_package("ceph-osd") << " for build-id " << module->build_id
              << " (in the OSD's container for a containerised OSD), or supply a profile made "
                 "where they are (cephscope profile generate, profiles.shipped_dirs)\"\n";
  }
}

}  // namespace

void apply_overrides(Config& config, const Overrides& overrides) {
  if (overrides.listen) {
    config.listen = *overrides.listen;
  }
  if (overrides.log_level) {
    config.log_level = *overrides.log_level;
  }
  if (overrides.web_config_file) {
    config.web_config_file = *overrides.web_config_file;
  }
}

int run_check(const Config& config) {
  const auto [tracefs, features] = prepare_kernel(config);
  std::cout << "kernel " << features.kernel_release << "\n"
            << "feature btf: " << describe(features.btf) << "\n"
            << "feature tracefs: " << describe(features.tracefs) << "\n"
            << "feature tp_btf: " << describe(features.tp_btf) << "\n"
            << "feature fentry: " << describe(features.fentry) << "\n"
            << "feature kprobe: " << describe(features.kprobe) << "\n"
            << "feature bpf_stats: " << describe(features.bpf_stats) << "\n"
            << "feature bpf_memory: " << describe(features.bpf_memory) << "\n";
  const CapabilityMask held = effective_capabilities();
  const CapabilityMask keep = capabilities_to_keep();
  std::cout << "capabilities held=" << capability_names(held)
            << " kept_once_started=" << capability_names(held & keep)
            << " missing=" << capability_names(running_set() & ~held) << "\n";
  auto events = ProcessEvents::start();
  if (!events.ok()) {
    std::cout << "discovery: unavailable (" << events.error().message << ")\n";
  }
  const CollectorContext ctx{features, config,
                             events.ok() ? (*events)->tracked_maps() : TrackedMaps{}, tracefs};
  for (const auto& c : make_collectors(ctx)) {
    const bool ok = c->hook() != "unavailable";
    // The reason words as the metrics have them, with the detail they leave out.
    Cause why = c->unavailable_why();
    std::string reasons = ok ? "" : std::string(to_string(why.reason));
    for (const auto& p : c->probes()) {
      if (ok && !p.attached) {
        const std::string word(to_string(p.why.reason));
        if (reasons.find(word) == std::string::npos) {
          reasons += (reasons.empty() ? "" : ",") + word;
        }
        why.detail += (why.detail.empty() ? "" : "; ") + p.probe + ": " + p.why.detail;
      }
    }
    std::cout << "collector=" << c->name() << " hook=" << c->hook()
              << " status=" << (ok ? "ok" : "unavailable")
              << (reasons.empty() ? "" : " reason=" + reasons) << " detail=\"" << why.detail
              << "\"\n";
  }
  check_osds(config);
  check_usdt(config, std::cout);
  // What the OSD collector attaches in each ceph-osd, from its probe table.
  for (const auto& u : osd::kUprobes) {
    const bool off = !config.collectors.osd.enabled ||
                     (u.detail && config.collectors.osd_detail == DetailMode::kNever);
    const bool windows = !off && u.detail && config.collectors.osd_detail == DetailMode::kAuto;
    std::cout << "osd probe=\"" << u.label << "\" program=" << u.program << (off ? " off" : "")
              << (windows ? " in_detail_windows" : "")
              << (u.instead_of != nullptr ? std::string(" instead_of=") + u.instead_of : "")
              << "\n";
  }
  return 0;
}

namespace {

// This host's name, for the spans' host.name ("" when the kernel gives none).
std::string host_name() {
  std::array<char, 256> name{};
  return gethostname(name.data(), name.size() - 1) == 0 ? std::string(name.data()) : "";
}

// The running daemon. Members are declared in the order they come to life, so they die in
// reverse: the endpoint first (no scrape reads a collector being torn down), then the
// collectors (each one's links before its BPF object), discovery, the process events, and
// the signal descriptor last. Nothing holds a callback into a member that is not there yet:
// process events are handed to discovery only when the loop consumes them.
class Daemon {
 public:
  Daemon(std::string config_path, Config config, Overrides overrides, Kernel kernel,
         UniqueFd signals)
      : config_path_(std::move(config_path)),
        config_(std::move(config)),
        overrides_(std::move(overrides)),
        kernel_(std::move(kernel)),
        signals_(std::move(signals)),
        slow_ops_(config_.collectors.osd_slow_op_records) {}

  // Everything up to ready: the process events, discovery, the collectors, the endpoint and
  // the first discovery and attach pass. The exit status when start-up fails.
  std::optional<int> start();
  // The event loop, until SIGTERM or SIGINT: the exit status.
  int run();

 private:
  // Reads the config file again: the parts that change at once (log level, discovery, limits,
  // the web config) apply, a config that does not load leaves the running one in force.
  void reload();
  [[nodiscard]] std::string status_line() const;

  const std::string config_path_;
  Config config_;
  const Overrides overrides_;
  const Kernel kernel_;
  const UniqueFd signals_;
  std::unique_ptr<ProcessEvents> events_;
  std::optional<TargetRegistry> registry_;
  std::optional<Discovery> discovery_;
  std::unique_ptr<OtlpExporter> traces_;  // outlives the log's listener calls
  SlowOpLog slow_ops_;
  OsdDetailControl detail_control_;
  std::optional<CollectorContext> context_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::optional<TargetSync> target_sync_;
  std::optional<Exporter> exporter_;
  std::atomic<bool> ready_{false};
  std::shared_ptr<const Routes> routes_;  // the server's sites share it, reload after reload
  std::unique_ptr<HttpServer> server_;
  UniqueFd inputs_;  // epoll over the signals and the process events
  std::optional<ServiceNotifier> notifier_;
  Clock::time_point next_scan_;
};

std::optional<int> Daemon::start() {
  auto events = ProcessEvents::start();
  if (!events.ok()) {
    spdlog::critical("{}", events.error().message);
    return 1;
  }
  events_ = std::move(*events);
  registry_.emplace(events_->tracked_maps(), config_.discovery.series_ttl,
                    static_cast<std::size_t>(events_->tracked_map_capacity()));
  discovery_.emplace(ProcReader("/proc"), *registry_);
  discovery_->set_config(config_.discovery);

  if (!config_.traces.otlp_endpoint.empty()) {
    auto traces = OtlpExporter::start({.endpoint = config_.traces.otlp_endpoint,
                                       .queue_size = config_.traces.queue_size,
                                       .timeout = config_.traces.timeout,
                                       .host = host_name(),
                                       .first_backoff = std::chrono::milliseconds(500)});
    if (!traces.ok()) {
      spdlog::critical("{}", traces.error().message);
      return 1;
    }
    traces_ = std::move(*traces);
    slow_ops_.set_listener([t = traces_.get()](const SlowOp& op) { t->offer(op); });
    spdlog::info("traces: op records go to {} as OTLP spans", config_.traces.otlp_endpoint);
  }

  // kept for the collectors' life: they may hold on to it (the kernel client's reloads do)
  context_.emplace(CollectorContext{kernel_.features, config_, events_->tracked_maps(),
                                    kernel_.tracefs_dir, &slow_ops_, &detail_control_});
  collectors_ = make_collectors(*context_);
  for (const auto& c : collectors_) {
    spdlog::info("collector {}: {}", c->name(), c->hook());
    for (const auto& p : c->probes()) {
      if (!p.attached && config_.strict_attach) {
        spdlog::critical("strict_attach: {} probe {} did not attach ({}): {}", c->name(), p.probe,
                         to_string(p.why.reason), p.why.detail);
        return 1;
      }
    }
  }
  target_sync_.emplace(*registry_, collectors_);
  exporter_.emplace(*registry_, collectors_, events_.get(), kernel_.features);
  exporter_->set_max_series(config_.limits.max_series);
  exporter_->set_traces(traces_.get());

  auto web = load_web_config(config_.web_config_file);
  if (!web.ok()) {
    spdlog::critical("{}", web.error().message);
    return 2;
  }
  const std::string security = web->summary();
  routes_ = std::make_shared<const Routes>(endpoint_routes(
      {.metrics = [this] { return exporter_->render(); },
       .metrics_protobuf = [this] { return exporter_->render_protobuf(); },
       .metrics_openmetrics = [this] { return exporter_->render_openmetrics(); },
       .slow_ops = [this] { return slow_ops_.json(); },
       .slow_op_trace = [this](std::string_view trace) { return slow_ops_.trace_json(trace); },
       .osd_detail = [this](const std::string& who,
                            const std::string& fsid) { return detail_control_.request(who, fsid); },
       .ready = &ready_}));
  auto server = HttpServer::start({.listen = config_.listen}, serve(routes_, std::move(*web)));
  if (!server.ok()) {
    spdlog::critical("{}", server.error().message);
    return 1;
  }
  server_ = std::move(*server);
  spdlog::info("serving /metrics on {}: {}", config_.listen, security);

  auto inputs = watch_inputs({signals_.get(), events_->poll_fd()});
  if (!inputs.ok()) {
    spdlog::critical("{}", inputs.error().message);
    return 1;
  }
  inputs_ = std::move(*inputs);
  auto notifier = ServiceNotifier::from_environment();
  if (!notifier.ok()) {
    spdlog::critical("{}", notifier.error().message);
    return 1;
  }
  notifier_.emplace(std::move(*notifier));

  discovery_->scan(Clock::now());
  (*target_sync_)();  // the first attach pass, before anyone is told the daemon is ready
  ready_ = true;
  notifier_->ready(status_line());
  next_scan_ = Clock::now() + config_.discovery.scan_interval;
  return std::nullopt;
}

// STATUS= for systemctl status: what is tracked, what works.
std::string Daemon::status_line() const {
  std::size_t up = 0;
  for (const auto& c : collectors_) {
    up += c->hook() != "unavailable" ? 1 : 0;
  }
  return std::to_string(registry_->tracked_processes()) + " processes tracked, " +
         std::to_string(up) + " of " + std::to_string(collectors_.size()) +
         " collectors up, serving " + config_.listen;
}

void Daemon::reload() {
  notifier_->reloading();
  auto fresh = load_config(config_path_);
  if (!fresh.ok()) {
    notifier_->ready(status_line());
    spdlog::error("reload rejected, the running config stays in force: {}", fresh.error().message);
    return;
  }
  apply_overrides(*fresh, overrides_);
  auto fresh_web = load_web_config(fresh->web_config_file);
  if (!fresh_web.ok()) {
    notifier_->ready(status_line());
    spdlog::error("reload rejected, the running config stays in force: {}",
                  fresh_web.error().message);
    return;
  }
  spdlog::info("endpoint: {}", fresh_web->summary());
  server_->set_site(serve(routes_, std::move(*fresh_web)));
  if (fresh->listen != config_.listen) {
    spdlog::warn("reload: listen changes at the next restart");
  }
  config_.log_level = fresh->log_level;
  spdlog::set_level(spdlog::level::from_str(config_.log_level));
  config_.discovery = fresh->discovery;
  config_.limits = fresh->limits;
  discovery_->set_config(config_.discovery);
  registry_->set_ttl(config_.discovery.series_ttl);
  exporter_->set_max_series(config_.limits.max_series);
  next_scan_ = Clock::now();
  spdlog::info("config reloaded from {}", config_path_);
  notifier_->ready(status_line());
}

int Daemon::run() {
  const auto on_process = [this](pid_t pid, bool exec) {
    const auto now = Clock::now();
    if (exec) {
      discovery_->on_exec(pid, now);
    } else {
      discovery_->on_exit(pid, now);
    }
  };
  for (;;) {
    std::array<epoll_event, 4> evs{};
    const int n = epoll_wait(inputs_.get(), evs.data(), evs.size(), 100);
    if (n < 0 && errno != EINTR) {
      spdlog::critical("epoll_wait: {}", std::strerror(errno));
      return 1;
    }
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.fd != signals_.get()) {
        if (auto consumed = events_->consume(on_process); !consumed.ok()) {
          spdlog::critical("{}", consumed.error().message);
          return 1;
        }
        continue;
      }
      for (;;) {
        auto signal = next_signal(signals_);
        if (!signal.ok()) {
          spdlog::critical("{}", signal.error().message);
          return 1;
        }
        if (!*signal) {
          break;
        }
        if (**signal != SIGHUP) {
          spdlog::info("signal {}: shutting down", **signal);
          notifier_->stopping();
          return 0;  // the members' destructors detach every probe, in reverse order
        }
        reload();
      }
    }
    if (auto serving = server_->status(); !serving.ok()) {
      spdlog::critical("{}", serving.error().message);
      return 1;
    }
    const auto now = Clock::now();
    discovery_->recheck_due(now);
    if (now >= next_scan_) {
      discovery_->scan(now);
      next_scan_ = now + config_.discovery.scan_interval;
    }
    (*target_sync_)();
    for (const auto& c : collectors_) {
      c->refresh(now);
    }
    // The loop runs at least every 100 ms: a ping proves it is not stuck.
    notifier_->watchdog(now);
    notifier_->status(status_line());
  }
}

}  // namespace

int run_daemon(const std::string& config_path, Config config, const Overrides& overrides) {
  Kernel kernel = prepare_kernel(config);
  const KernelFeatures& features = kernel.features;
  spdlog::info("kernel {}: tp_btf {}, fentry {}, kprobe {}", features.kernel_release,
               features.tp_btf.available ? "yes" : "no", features.fentry.available ? "yes" : "no",
               features.kprobe.available ? "yes" : "no");
  if (!features.bpf_memory.available) {
    spdlog::warn("{}", features.bpf_memory.why.detail);
  }
  auto dropped = drop_to(capabilities_to_keep());
  if (!dropped.ok()) {
    spdlog::critical("dropping the capabilities start-up needed: {}", dropped.error().message);
    return 1;
  }
  spdlog::info("capabilities kept: {}{}; dropped: {}", capability_names(dropped->kept),
               (dropped->kept & capability_bit(CAP_SYS_ADMIN)) != 0
                   ? " (sys_admin: this kernel refuses perf events or uprobes without it)"
                   : "",
               capability_names(dropped->dropped));
  const std::uint64_t open_files = raise_open_files_limit();
  if (open_files < 4096) {
    spdlog::warn(
        "open files limited to {} (LimitNOFILE, ulimit -n): each probed process takes "
        "a descriptor per uprobe, and the endpoint up to 128",
        open_files);
  }
  // Before any thread starts, so that every thread leaves the signals to the signalfd.
  auto signals = open_signal_fd();
  if (!signals.ok()) {
    spdlog::critical("{}", signals.error().message);
    return 1;
  }
  Daemon daemon(config_path, std::move(config), overrides, std::move(kernel), std::move(*signals));
  if (auto failed = daemon.start()) {
    return *failed;
  }
  return daemon.run();
}

}  // namespace cephscope
