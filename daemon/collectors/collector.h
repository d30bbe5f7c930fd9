// A collector owns one BPF object: it loads it, attaches its probes, and at scrape time
// reads its maps into a MetricSink. This is the interface the daemon loop and the exporter
// see; what every BPF-backed collector shares is in collectors/bpf_collector.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bpf/cephscope.h"
#include "collectors/metric_sink.h"
#include "collectors/status.h"
#include "config/config.h"
#include "core/labels.h"
#include "discovery/registry.h"
#include "libbpf/features.h"
#include "libbpf/prog_stats.h"

namespace cephscope {

struct CollectorContext {
  const KernelFeatures& features;
  const Config& config;
  int tracked_map_fd;  // the shared tgid -> target id filter map
  std::string tracefs_dir;
};

using TargetLabelMap = std::unordered_map<std::uint32_t, Labels>;

class Collector {
 public:
  virtual ~Collector() = default;
  [[nodiscard]] virtual const char* name() const = 0;
  // The hook type in use ("tracepoint", "tp_btf", "fentry", "kprobe") or "unavailable".
  [[nodiscard]] virtual std::string hook() const = 0;
  [[nodiscard]] virtual std::string unavailable_reason() const = 0;
  // Reads the maps into `out`. Series of target ids absent from `targets` are stale (the
  // target expired) and are deleted from the maps.
  virtual void collect(MetricSink& out, const TargetLabelMap& targets) = 0;
  [[nodiscard]] virtual std::vector<ProbeStatus> probes() const = 0;
  [[nodiscard]] virtual std::vector<MapUsage> maps() const = 0;
  [[nodiscard]] virtual std::vector<std::pair<std::string, ProgramStats>> programs() const = 0;
  [[nodiscard]] virtual std::array<std::uint64_t, LOST_REASONS> lost() const = 0;
  // Called from the daemon loop with the current targets (at most every 100 ms), for
  // collectors that attach per process. The default ignores it.
  virtual void sync_targets(const std::vector<TargetView>& /*targets*/) {}
};

std::vector<std::unique_ptr<Collector>> make_collectors(const CollectorContext& ctx);

}  // namespace cephscope
