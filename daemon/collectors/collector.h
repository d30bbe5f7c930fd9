// A collector owns one BPF object: it loads it, attaches its probes, and at scrape time
// reads its maps into metric families. Everything common to the BPF side (links, probe
// status, map usage, lost-event counters, program run time) lives in BpfCollector.
#pragma once

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/cephscope.h"
#include "collectors/metric_sink.h"
#include "config/config.h"
#include "core/labels.h"
#include "discovery/registry.h"
#include "libbpf/features.h"
#include "libbpf/handles.h"
#include "libbpf/prog_stats.h"

namespace cephscope {

struct CollectorContext {
  const KernelFeatures& features;
  const Config& config;
  int tracked_map_fd;  // the shared tgid -> target id filter map
  std::string tracefs_dir;
};

using TargetLabelMap = std::unordered_map<std::uint32_t, Labels>;

struct MapUsage {
  std::string map;
  std::size_t entries;
  std::size_t capacity;
};

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

class BpfCollector : public Collector {
 public:
  [[nodiscard]] std::string hook() const override { return obj_ ? hook_ : "unavailable"; }
  [[nodiscard]] std::string unavailable_reason() const override { return reason_; }
  [[nodiscard]] std::vector<ProbeStatus> probes() const override { return probes_; }
  [[nodiscard]] std::vector<MapUsage> maps() const override;
  [[nodiscard]] std::vector<std::pair<std::string, ProgramStats>> programs() const override;
  [[nodiscard]] std::array<std::uint64_t, LOST_REASONS> lost() const override;

 protected:
  // Takes ownership of a loaded skeleton: `destroy` runs after every link is gone.
  void adopt(bpf_object* obj, std::function<void()> destroy, std::string hook);
  // Attaches one program by its SEC() definition and records the outcome.
  bool attach(bpf_program* prog, const std::string& probe);
  // Marks the collector unavailable; every probe in `names` is reported with `reason`.
  void unavailable(const std::string& reason, const std::vector<std::string>& names);
  // Records a probe that was left out while the rest of the collector works.
  void unavailable_probe(ProbeStatus status) { probes_.push_back(std::move(status)); }
  [[nodiscard]] bool loaded() const { return obj_ != nullptr; }
  [[nodiscard]] bool any_attached() const;

 private:
  struct Owner {
    std::function<void()> destroy;
    Owner() = default;
    Owner(const Owner&) = delete;
    Owner& operator=(const Owner&) = delete;
    ~Owner() {
      if (destroy) {
        destroy();
      }
    }
  };
  // Declaration order matters: links_ is destroyed before owner_ closes the object.
  Owner owner_;
  std::vector<Link> links_;
  bpf_object* obj_ = nullptr;
  std::string hook_;
  std::string reason_;
  std::vector<ProbeStatus> probes_;
};

// Makes a skeleton's tracked_tgids map the shared one; returns an error text ("" when done).
std::string reuse_tracked_map(bpf_map* map, int tracked_map_fd);

// Opens a collector's skeleton with the shared tracked-process map; an error text on failure.
template <typename Skel, void (*Destroy)(Skel*)>
std::string open_skeleton(Skeleton<Skel, Destroy>& skel, Skel* (*open)(), int tracked_map_fd) {
  skel.reset(open());
  if (!skel) {
    return std::string("cannot open the BPF object: ") + std::strerror(errno);
  }
  return reuse_tracked_map(skel->maps.tracked_tgids, tracked_map_fd);
}

std::vector<std::unique_ptr<Collector>> make_collectors(const CollectorContext& ctx);

}  // namespace cephscope
