// Converts the kernel's log2 slots into a Prometheus histogram: cumulative buckets with `le`
// in seconds, every bucket of the layout present (so every series of a metric has the same
// `le` set), the overflow slot as +Inf, and the real sum.
#pragma once

#include <prometheus/client_metric.h>

#include <array>

#include "bpf/histogram.h"
#include "core/hist.h"

namespace cephscope {

// Upper bounds in seconds of the finite buckets: 1e-6 * 2^i.
const std::array<double, HIST_FINITE_SLOTS>& bucket_bounds_seconds();

// Kernel slot i is kept as a bucket of `buckets` when it is its upper bound (kCoarse: the
// even slots; their cumulative counts are exact).
bool slot_is_bucket(std::size_t slot, Buckets buckets);

prometheus::ClientMetric::Histogram to_prometheus(const struct hist& h,
                                                  Buckets buckets = Buckets::kFull);

}  // namespace cephscope
