// Scrape of an op_stats map (latency, bytes, errors per target and operation), shared by
// the syscall and vfs collectors, which differ only in names.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectors/bpf_collector.h"
#include "collectors/op_series_groups.h"

namespace cephscope {

struct OpStatsMetrics {
  const char* prefix;    // "cephscope_syscall" -> _seconds, _bytes_total, _errors_total
  const char* what;      // "syscalls", "vfs calls": for the help texts
  const char* op_label;  // "syscall" or "op"
  const char* layer;     // `layer` of cephscope_layer_bytes_total
  std::span<const char* const> op_names;
  // "read" or "write" for operations whose return value counts bytes, else nullptr.
  const char* (*direction)(unsigned op);
};

// `buckets`: the collector's setting; "auto" exports a Ceph daemon's latency with +Inf alone
// (its rate and mean: its own stages say where its time goes, docs/metrics.md#series-budget)
// and every other target's with every bucket.
// A target's series are the sum of its hash entries (stats_fd) and its group's.
Status scrape_op_stats(int stats_fd, const OpSeriesGroups& groups, const OpStatsMetrics& spec,
                       std::optional<Buckets> buckets, MetricSink& out,
                       const TargetLabelMap& targets);

// A collector of op_stats (syscall, vfs): its hash and its series groups.
class OpStatsCollector : public BpfCollector {
 public:
  // Takes back the groups of expired targets and gives the new ones theirs.
  void sync_targets(const std::vector<TargetView>& targets) override;
  // The maps, and the series groups as a map of OP_SERIES_GROUPS entries, one per owned group.
  [[nodiscard]] std::vector<MapUsage> maps() const override;

 protected:
  // After load: the stats hash (pruned by target), the groups' owners and series.
  void use_maps(bpf_map* stats, bpf_map* owner, bpf_map* series, std::uint32_t ops);
  void forget_maps() override {
    stats_fd_ = -1;
    groups_.reset();
  }
  Status collect_op_stats(const OpStatsMetrics& spec, std::optional<Buckets> buckets,
                          MetricSink& out, const TargetLabelMap& targets) const;

 private:
  int stats_fd_ = -1;
  std::string series_name_;  // the groups' per-CPU array, as maps() names it
  std::optional<OpSeriesGroups> groups_;
};

}  // namespace cephscope
