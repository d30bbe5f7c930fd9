#include "collectors/op_stats.h"

#include <algorithm>
#include <map>
#include <string>

#include <spdlog/spdlog.h>

#include "core/hist.h"
#include "libbpf/maps.h"

namespace cephscope {

Status scrape_op_stats(int stats_fd, const OpSeriesGroups& groups, const OpStatsMetrics& spec,
                       std::optional<Buckets> buckets, MetricSink& out,
                       const TargetLabelMap& targets) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, op_stats> sums;
  auto add = [&](std::uint32_t target, std::uint32_t op, std::span<const op_stats> cpus) {
    auto& s = sums[{target, op}];
    for (const auto& c : cpus) {
      add_hist(s.latency, c.latency);
      s.bytes += c.bytes;
      s.errors += c.errors;
    }
  };
  Status walked = for_each_percpu<target_op_key, op_stats>(
      stats_fd,
      [&](const target_op_key& k, std::span<const op_stats> cpus) { add(k.target, k.op, cpus); });
  if (!walked.ok()) {
    return walked;
  }
  if (Status grouped = groups.for_each(add); !grouped.ok()) {
    return grouped;
  }

  const std::string prefix = spec.prefix;
  const std::string what = spec.what;
  std::map<std::pair<std::uint32_t, std::string>, std::uint64_t> layer_bytes;
  for (const auto& [key, s] : sums) {
    const auto [target, op] = key;
    auto labels = targets.find(target);
    if (labels == targets.end() || op >= spec.op_names.size()) {
      continue;
    }
    const Labels l = labels->second + Labels{{spec.op_label, spec.op_names[op]}};
    const bool ceph_daemon = std::any_of(labels->second.begin(), labels->second.end(),
                                         [](const auto& kv) { return kv.first == "ceph_daemon"; });
    out.histogram(prefix + "_seconds", "Latency of " + what + " made by tracked processes.", l,
                  s.latency,
                  buckets_setting(buckets, ceph_daemon ? Buckets::kNone : Buckets::kFull));
    out.counter(prefix + "_errors_total", "Count of " + what + " that returned an error.", l,
                static_cast<double>(s.errors));
    if (const char* dir = spec.direction(op)) {
      out.counter(prefix + "_bytes_total", "Bytes moved by " + what + ", from their return values.",
                  l, static_cast<double>(s.bytes));
      layer_bytes[{target, dir}] += s.bytes;
    }
  }
  for (const auto& [key, bytes] : layer_bytes) {
    out.counter("cephscope_layer_bytes_total",
                "Bytes seen at each layer of the IO path, per target.",
                targets.at(key.first) + Labels{{"layer", spec.layer}, {"direction", key.second}},
                static_cast<double>(bytes));
  }
  return ok_status();
}

void OpStatsCollector::use_maps(bpf_map* stats, bpf_map* owner, bpf_map* series,
                                std::uint32_t ops) {
  stats_fd_ = bpf_map__fd(stats);
  prune_by_target<target_op_key>(stats_fd_);
  series_name_ = bpf_map__name(series);
  groups_.emplace(bpf_map__fd(owner), bpf_map__fd(series), ops);
}

std::vector<MapUsage> OpStatsCollector::maps() const {
  std::vector<MapUsage> out = BpfCollector::maps();
  if (groups_) {
    out.push_back({series_name_, groups_->owned(), OP_SERIES_GROUPS});
  }
  return out;
}

void OpStatsCollector::sync_targets(const std::vector<TargetView>& targets) {
  if (!groups_) {
    return;
  }
  TargetIds live;
  std::vector<std::uint32_t> ids;
  for (const auto& t : targets) {
    live.insert(t.id);
    ids.push_back(t.id);
  }
  auto lock = maps_lock();  // a scrape reads the owners
  if (auto freed = groups_->release(live); !freed.ok()) {
    spdlog::warn("{}: series groups of expired targets not taken back: {}", name(),
                 freed.error().message);
  }
  if (auto given = groups_->claim(ids); !given.ok()) {
    spdlog::warn("{}: series groups not given out (the hash counts instead): {}", name(),
                 given.error().message);
  }
}

Status OpStatsCollector::collect_op_stats(const OpStatsMetrics& spec,
                                          std::optional<Buckets> buckets, MetricSink& out,
                                          const TargetLabelMap& targets) const {
  if (stats_fd_ < 0 || !groups_) {
    return ok_status();
  }
  return scrape_op_stats(stats_fd_, *groups_, spec, buckets, out, targets);
}

}  // namespace cephscope
