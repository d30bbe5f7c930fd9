// Arithmetic on the kernel's log2 histogram (bpf/histogram.h): summing per-CPU copies and
// counting samples. In core because collectors sum and metrics convert, and neither may
// include the other's folder.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bpf/histogram.h"
#include "core/buckets.h"

namespace cephscope {

// A histogram's buckets, where a map keeps them apart from its sum (bpf/osd.h, osd_stats).
using HistSlots = __u64[HIST_SLOTS];

// Adds one CPU's buckets into an accumulator's.
inline void add_slots(HistSlots& into, const HistSlots& from) {
  for (std::size_t i = 0; i < HIST_SLOTS; ++i) {
    into[i] += from[i];
  }
}

// Samples in the buckets, +Inf slot included.
inline std::uint64_t slots_count(const HistSlots& slots) {
  std::uint64_t n = 0;
  for (auto slot : slots) {
    n += slot;
  }
  return n;
}

// Adds one CPU's histogram into an accumulator.
inline void add_hist(struct hist& into, const struct hist& from) {
  add_slots(into.slots, from.slots);
  into.sum_ns += from.sum_ns;
}

// Samples in the histogram, +Inf slot included.
inline std::uint64_t hist_count(const struct hist& h) {
  return slots_count(h.slots);
}

}  // namespace cephscope
