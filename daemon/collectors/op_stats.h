// Scrape of an op_stats map (latency, bytes, errors per target and operation), shared by
// the syscall and vfs collectors, which differ only in names.
#pragma once

#include <span>

#include "collectors/collector.h"

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
Status scrape_op_stats(int stats_fd, const OpStatsMetrics& spec, const std::string& buckets,
                       MetricSink& out, const TargetLabelMap& targets);

}  // namespace cephscope
