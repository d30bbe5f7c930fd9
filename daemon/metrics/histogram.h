// Converts the kernel's log2 slots into a Prometheus histogram: cumulative buckets with `le`
// in seconds, every bucket present (so every series has the same `le` set), the overflow
// slot as +Inf, and the real sum.
#pragma once

#include <prometheus/client_metric.h>

#include <array>

#include "bpf/histogram.h"

namespace cephscope {

// Upper bounds in seconds of the finite buckets: 1e-6 * 2^i.
const std::array<double, HIST_FINITE_SLOTS>& bucket_bounds_seconds();

prometheus::ClientMetric::Histogram to_prometheus(const struct hist& h);

}  // namespace cephscope
