#include "metrics/histogram.h"

#include <limits>

namespace cephscope {

const std::array<double, HIST_FINITE_SLOTS>& bucket_bounds_seconds() {
  static const auto bounds = [] {
    std::array<double, HIST_FINITE_SLOTS> b{};
    for (std::size_t i = 0; i < b.size(); ++i) {
      b[i] = static_cast<double>(HIST_FIRST_BOUND_NS << i) / 1e9;
    }
    return b;
  }();
  return bounds;
}

bool slot_is_bucket(std::size_t slot, Buckets buckets) {
  switch (buckets) {
    case Buckets::kFull:
      return true;
    case Buckets::kCoarse:
      return slot % 2 == 0;
    case Buckets::kNone:
      return false;
  }
  return true;
}

prometheus::ClientMetric::Histogram to_prometheus(const struct hist& h, Buckets buckets) {
  prometheus::ClientMetric::Histogram out;
  const auto& bounds = bucket_bounds_seconds();
  std::uint64_t cumulative = 0;
  out.bucket.reserve(HIST_SLOTS);
  for (std::size_t i = 0; i < HIST_FINITE_SLOTS; ++i) {
    cumulative += h.slots[i];
    if (slot_is_bucket(i, buckets)) {
      out.bucket.push_back({cumulative, bounds[i]});
    }
  }
  cumulative += h.slots[HIST_FINITE_SLOTS];
  out.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  out.sample_count = cumulative;
  out.sample_sum = static_cast<double>(h.sum_ns) / 1e9;
  return out;
}

}  // namespace cephscope
