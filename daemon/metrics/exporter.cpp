#include "metrics/exporter.h"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "core/build_info.h"
#include "discovery/process_events.h"
#include "metrics/otlp_exporter.h"
#include "metrics/prometheus_sink.h"
#include "metrics/protobuf_exposition.h"
#include "metrics/text_exposition.h"

namespace cephscope {
namespace {

constexpr std::array<const char*, LOST_REASONS> kLostReasons = {"inflight_full", "stats_full",
                                                                "no_start", "record_full"};

// Which series limits.max_series keeps first: the OSD stages, which nothing else on the node
// measures, then the block devices (shared by every OSD on them), then per-process syscall
// and vfs series.
int series_priority(const std::string& collector) {
  if (collector == "osd") {
    return 0;
  }
  if (collector == "block") {
    return 1;
  }
  if (collector == "syscall") {
    return 2;
  }
  return 3;
}

}  // namespace

std::string Exporter::render() {
  return serialize_text(collect().families);
}

std::string Exporter::render_openmetrics() {
  return serialize_openmetrics(collect());
}

std::string Exporter::render_protobuf() {
  return serialize_protobuf(collect());
}

Exposition Exporter::collect() {
  std::lock_guard lock(mu_);
  PrometheusSink sink(max_series_.load());
  // One look at the targets for the whole scrape: a target that expires meanwhile goes away
  // whole, its data and its cephscope_target_info together, in the next scrape.
  const std::vector<TargetView> snapshot = registry_.snapshot();
  TargetLabelMap targets;
  for (const auto& t : snapshot) {
    targets.emplace(t.id, target_labels(t.identity));
  }
  std::vector<std::pair<std::string, double>> durations;
  for (const auto& c : collectors_) {
    const auto start = std::chrono::steady_clock::now();
    sink.set_source(c->name(), series_priority(c->name()));
    if (auto scraped = c->scrape(sink, targets); !scraped.ok()) {
      spdlog::warn("collector {}: maps not read: {}", c->name(), scraped.error().message);
    }
    durations.emplace_back(
        c->name(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  sink.apply_cap();
  self_metrics(sink, snapshot, durations);
  return sink.take_exposition();
}

void Exporter::self_metrics(PrometheusSink& out, const std::vector<TargetView>& targets,
                            const std::vector<std::pair<std::string, double>>& durations) {
  out.gauge("cephscope_build_info",
            "cephscope's version and git revision, and the libbpf and kernel it runs with.",
            {{"version", build_info().version},
             {"revision", build_info().revision},
             {"libbpf", std::to_string(libbpf_major_version()) + "." +
                            std::to_string(libbpf_minor_version())},
             {"kernel", features_.kernel_release}},
            1);
  for (const auto& [name, seconds] : durations) {
    out.gauge("cephscope_collector_scrape_duration_seconds",
              "Time a collector took to read its maps.", {{"collector", name}}, seconds);
  }
  for (const auto& c : collectors_) {
    const std::string name = c->name();
    const bool up = c->hook() != "unavailable";
    out.gauge("cephscope_collector_up",
              "1 when the collector is loaded and attached, with the hook it uses.",
              {{"collector", name}, {"hook", c->hook()}}, up ? 1 : 0);
    for (const auto& p : c->probes()) {
      out.gauge("cephscope_probe_attached",
                "1 when the probe is attached; reason says why not (the detail is in the log and "
                "in --check).",
                {{"collector", name},
                 {"probe", p.probe},
                 {"target", p.target},
                 {"fsid", p.fsid},  // "" (left out) but for a Ceph daemon's probes
                 {"reason", std::string(to_string(p.why.reason))}},
                p.attached ? 1 : 0);
    }
    for (const auto& m : c->maps()) {
      out.gauge("cephscope_map_entries", "Entries in a BPF map.", {{"map", m.map}},
                static_cast<double>(m.entries));
      out.gauge("cephscope_map_capacity", "Capacity of a BPF map.", {{"map", m.map}},
                static_cast<double>(m.capacity));
    }
    if (const auto lost = c->lost(); lost.ok()) {
      for (std::size_t r = 0; r < lost->size(); ++r) {
        out.counter("cephscope_events_lost_total", "Events not folded into a histogram, by reason.",
                    {{"collector", name}, {"reason", kLostReasons[r]}},
                    static_cast<double>((*lost)[r]));
      }
    } else {
      spdlog::warn("collector {}: lost events not read: {}", name, lost.error().message);
    }
    for (const auto& [prog, stats] : c->programs()) {
      const Labels l{{"collector", name}, {"program", prog}};
      out.counter("cephscope_bpf_program_run_seconds_total",
                  "Time the kernel spent running a BPF program (needs kernel.bpf_stats_enabled=1).",
                  l, static_cast<double>(stats.run_time_ns) / 1e9);
      out.counter("cephscope_bpf_program_runs_total",
                  "Times a BPF program ran (needs kernel.bpf_stats_enabled=1).", l,
                  static_cast<double>(stats.run_count));
      out.counter("cephscope_bpf_program_misses_total",
                  "Times the kernel skipped a BPF program because another one was running on "
                  "the CPU (recursion_misses).",
                  l, static_cast<double>(stats.misses));
    }
  }
  out.gauge("cephscope_bpf_stats_enabled", "1 when the kernel counts BPF program run time.", {},
            features_.bpf_stats.available ? 1 : 0);
  if (events_ != nullptr) {
    if (const auto lost = events_->lost(); lost.ok()) {
      out.counter("cephscope_events_lost_total", "Events not folded into a histogram, by reason.",
                  {{"collector", "discovery"}, {"reason", "ringbuf_full"}},
                  static_cast<double>(*lost));
    } else {
      spdlog::warn("discovery: lost events not read: {}", lost.error().message);
    }
    out.gauge("cephscope_map_entries", "Entries in a BPF map.", {{"map", "tracked_tgids"}},
              static_cast<double>(registry_.tracked_processes()));
    out.gauge("cephscope_map_capacity", "Capacity of a BPF map.", {{"map", "tracked_tgids"}},
              static_cast<double>(events_->tracked_map_capacity()));
  }
  if (traces_ != nullptr) {
    const OtlpCounts t = traces_->counts();
    out.counter("cephscope_trace_spans_sent_total",
                "Spans of op records sent to traces.otlp_endpoint (an op and its stages).", {},
                static_cast<double>(t.spans_sent));
    out.counter("cephscope_trace_records_sent_total", "Op records sent to traces.otlp_endpoint.",
                {}, static_cast<double>(t.records_sent));
    out.counter("cephscope_trace_send_errors_total",
                "Requests to traces.otlp_endpoint that failed, retried or not.", {},
                static_cast<double>(t.send_errors));
    for (std::size_t r = 0; r < kDropReasons.size(); ++r) {
      out.counter("cephscope_trace_records_dropped_total",
                  "Op records not sent to traces.otlp_endpoint, by reason.",
                  {{"reason", kDropReasons[r]}}, static_cast<double>(t.dropped[r]));
    }
    out.gauge("cephscope_trace_queue_records", "Op records waiting to be sent as spans.", {},
              static_cast<double>(t.queued));
  }
  out.gauge("cephscope_targets", "Targets known, live or awaiting their series TTL.", {},
            static_cast<double>(targets.size()));
  for (const auto& t : targets) {
    for (pid_t pid : t.pids) {
      out.gauge("cephscope_target_info", "A tracked process and what is known about it.",
                target_labels(t.identity) +
                    Labels{{"kind", to_string(t.identity.kind)},
                           {"pid", std::to_string(pid)},
                           {"target_container", t.identity.container.container},
                           {"target_pod", t.identity.container.pod},
                           {"target_namespace", t.identity.container.pod_namespace}},
                1);
    }
  }
  // 0 for every OSD target, so an alert on > 0 never mistakes a missing series for peace.
  auto conflicts = registry_.conflicts();
  for (const auto& t : targets) {
    if (t.identity.kind == TargetKind::kCephOsd) {
      conflicts.try_emplace(t.identity.ceph_daemon, 0);
    }
  }
  for (const auto& [daemon, n] : conflicts) {
    out.gauge("cephscope_osd_identity_conflict",
              "Live processes claiming this OSD besides the one tracked as it (not tracked).",
              {{"ceph_daemon", daemon}}, static_cast<double>(n));
  }
  for (const auto& [reason, n] : registry_.refusals()) {
    out.counter("cephscope_discovery_refusals_total",
                "Files named by targets that discovery refused to read, by reason.",
                {{"reason", reason}}, static_cast<double>(n));
  }
  out.gauge("cephscope_scrape_series_dropped",
            "Series left out of this scrape by limits.max_series.", {},
            static_cast<double>(out.dropped()));
  // Each collector's share, for the series budget (docs/metrics.md): kept, and left out by
  // the cap (OSD series are the last to go).
  for (const auto& [collector, n] : out.kept_by_source()) {
    out.gauge("cephscope_scrape_series", "Series of this scrape by collector (self-metrics apart).",
              {{"collector", collector}}, static_cast<double>(n));
  }
  for (const auto& [collector, n] : out.dropped_by_source()) {
    out.gauge("cephscope_scrape_series_dropped_by_collector",
              "Series of this scrape left out by limits.max_series, by collector.",
              {{"collector", collector}}, static_cast<double>(n));
  }
}

}  // namespace cephscope
