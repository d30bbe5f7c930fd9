// A collector owns one BPF object: it loads it, attaches its probes, and at scrape time
// reads its maps into a MetricSink. This is the interface the daemon loop and the exporter
// see; what every BPF-backed collector shares is in collectors/bpf_collector.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bpf/cephscope.h"
#include "collectors/metric_sink.h"
#include "collectors/status.h"
#include "config/config.h"
#include "core/labels.h"
#include "core/result.h"
#include "discovery/registry.h"
#include "discovery/tracked_maps.h"
#include "libbpf/features.h"
#include "libbpf/prog_stats.h"

namespace cephscope {

class OsdDetailControl;
class SlowOpLog;

struct CollectorContext {
  const KernelFeatures& features;
  const Config& config;
  TrackedMaps tracked_maps;  // the shared tracked-process filter
  std::string tracefs_dir;
  SlowOpLog* slow_ops = nullptr;               // where the OSD collector keeps slow-op records
  OsdDetailControl* detail_control = nullptr;  // the endpoint's requests of the OSD collector
};

using TargetLabelMap = std::unordered_map<std::uint32_t, Labels>;
using TargetIds = std::unordered_set<std::uint32_t>;
// Events a collector's programs could not fold, by enum cephscope_lost_reason.
using LostCounts = std::array<std::uint64_t, LOST_REASONS>;

class Collector {
 public:
  Collector() = default;
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  virtual ~Collector() = default;

  [[nodiscard]] virtual const char* name() const = 0;
  // The hook type in use ("tracepoint", "tp_btf", "fentry", "kprobe") or "unavailable".
  [[nodiscard]] virtual std::string hook() const = 0;
  // Why the collector is unavailable (ok when it is not).
  [[nodiscard]] virtual Cause unavailable_why() const = 0;
  [[nodiscard]] virtual std::vector<ProbeStatus> probes() const = 0;
  [[nodiscard]] virtual std::vector<MapUsage> maps() const = 0;
  [[nodiscard]] virtual std::vector<std::pair<std::string, ProgramStats>> programs() const = 0;
  [[nodiscard]] virtual Result<LostCounts> lost() const = 0;

  // One scrape: reads the maps into `out`, and only reads. On an error nothing of the maps
  // that failed is written: a partial sum would look like a counter reset.
  Status scrape(MetricSink& out, const TargetLabelMap& targets);
  // Deletes the map entries of targets not in `live` (they expired). Called by the daemon
  // loop when targets went away, never by a scrape, and never while one runs: a map walk
  // that meets a deleted key starts again from the first key and would count entries twice.
  void prune(const TargetIds& live);

  // Called by the daemon loop when the registry's targets changed, for collectors that
  // attach per process. The default ignores it.
  virtual void sync_targets(const std::vector<TargetView>& /*targets*/) {}
  // Called by the daemon loop on every pass (100 ms apart at most) to keep what the BPF
  // programs read current: clock offsets, device maps. Must stay cheap.
  virtual void refresh(Clock::time_point /*now*/) {}

 protected:
  // Reads the maps into `out`. Entries of target ids absent from `targets` are skipped: their
  // target expired and prune() has not deleted them yet.
  virtual Status collect(MetricSink& out, const TargetLabelMap& targets) = 0;
  virtual void prune_maps(const TargetIds& /*live*/) {}
  // Held by a collector's own thread while it deletes map entries: scrapes and prunes wait.
  [[nodiscard]] std::unique_lock<std::mutex> maps_lock() { return std::unique_lock(maps_mu_); }

 private:
  std::mutex maps_mu_;  // scrape() and prune() take turns
};

std::vector<std::unique_ptr<Collector>> make_collectors(const CollectorContext& ctx);

// Each collector, in its folder beside its BPF program (bpf/NAME.bpf.c); see docs/collectors/.
std::unique_ptr<Collector> make_syscall_collector(const CollectorContext& ctx);
std::unique_ptr<Collector> make_block_collector(const CollectorContext& ctx);
std::unique_ptr<Collector> make_vfs_collector(const CollectorContext& ctx);
// Per-op stage latency in ceph-osd: uprobes attached per OSD process (sync_targets).
std::unique_ptr<Collector> make_osd_collector(const CollectorContext& ctx);
// Client-observed op latency in librados clients: uprobes on the Objecter of each client
// process (sync_targets).
std::unique_ptr<Collector> make_rados_collector(const CollectorContext& ctx);
std::unique_ptr<Collector> make_kclient_collector(const CollectorContext& ctx);
// Static markers (USDT) that the config's usdt: rules name, counted and timed in the kernel:
// one uprobe per marker site, attached per process (sync_targets).
std::unique_ptr<Collector> make_usdt_collector(const CollectorContext& ctx);

}  // namespace cephscope
