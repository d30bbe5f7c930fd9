// Arithmetic on the kernel's log2 histogram (bpf/histogram.h): summing per-CPU copies and
// counting samples. In core because collectors sum and metrics convert, and neither may
// include the other's folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bpf/histogram.h"

namespace cephscope {

// Which classic buckets a histogram is exported with: a series budget per OSD
// (docs/metrics.md#series-budget). The kernel's slots are the same for all three.
enum class Buckets {
  kFull,    // every slot: 1 us * 2^i, i = 0..24, then +Inf (28 series with _sum and _count)
  kCoarse,  // every other slot: 1 us * 4^j, j = 0..12, then +Inf (16 series)
  kNone,    // +Inf only: the count and the sum, so the rate and the mean (3 series)
};

// A collector's `buckets` setting (full, coarse, none), or `when_auto` for "auto".
inline Buckets buckets_setting(std::string_view setting, Buckets when_auto) {
  if (setting == "full") {
    return Buckets::kFull;
  }
  if (setting == "coarse") {
    return Buckets::kCoarse;
  }
  if (setting == "none") {
    return Buckets::kNone;
  }
  return when_auto;
}

// Adds one CPU's histogram into an accumulator.
inline void add_hist(struct hist& into, const struct hist& from) {
  for (std::size_t i = 0; i < HIST_SLOTS; ++i) {
    into.slots[i] += from.slots[i];
  }
  into.sum_ns += from.sum_ns;
}

// Samples in the histogram, +Inf slot included.
inline std::uint64_t hist_count(const struct hist& h) {
  std::uint64_t n = 0;
  for (auto slot : h.slots) {
    n += slot;
  }
  return n;
}

}  // namespace cephscope
