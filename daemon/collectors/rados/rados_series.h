// One client series (bpf/rados.h, struct rados_stats: a client's ops of one op class in one
// pool, per image or pid where those are labels) summed in user space and written as metrics.
#pragma once

#include <cstdint>
#include <string>

#include "bpf/rados.h"
#include "collectors/metric_sink.h"
#include "collectors/slow_ops.h"
#include "core/buckets.h"
#include "core/labels.h"

namespace cephscope::rados {

// Adds one CPU's (or one kept) copy of a series to INTO.
void add_stats(rados_stats& into, const rados_stats& from);

// What names one series besides its target: the pool id (RADOS_POOL_UNKNOWN where the build's
// markers carry none), the op class, and the image or else the pid, when set.
struct ClientSeries {
  std::int64_t pool = 0;
  std::uint32_t op = 0;
  std::uint32_t pid = 0;
  std::string image;
};

// The series' metrics under its client's TARGET labels; EXEMPLAR, when known, is its slowest
// op of the interval.
void put_client_series(MetricSink& out, const Labels& target, const ClientSeries& series,
                       const rados_stats& s, Buckets buckets, const SlowOp* exemplar);

// A client's bytes at the client layer in one direction (one series per target: the pool,
// image and pid are in cephscope_client_op_seconds).
void put_client_bytes(MetricSink& out, const Labels& target, bool read, std::uint64_t bytes);

}  // namespace cephscope::rados
