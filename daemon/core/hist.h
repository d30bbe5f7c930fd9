// Arithmetic on the kernel's log2 histogram (bpf/histogram.h): summing per-CPU copies and
// counting samples. In core because collectors sum and metrics convert, and neither may
// include the other's folder.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bpf/histogram.h"
#include "core/buckets.h"

namespace cephscope {

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
