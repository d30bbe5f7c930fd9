#include "collectors/op_stats.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/hist.h"
#include "libbpf/maps.h"

namespace cephscope {

Status scrape_op_stats(int stats_fd, const OpStatsMetrics& spec, const std::string& buckets,
                       MetricSink& out, const TargetLabelMap& targets) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, op_stats> sums;
  Status walked = for_each_percpu<target_op_key, op_stats>(
      stats_fd, [&](const target_op_key& k, std::span<const op_stats> cpus) {
        auto& s = sums[{k.target, k.op}];
        for (const auto& c : cpus) {
          add_hist(s.latency, c.latency);
          s.bytes += c.bytes;
          s.errors += c.errors;
        }
      });
  if (!walked.ok()) {
    return walked;
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

}  // namespace cephscope
