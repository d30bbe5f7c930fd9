// Which classic buckets a histogram is exported with, and a collector's setting of it. Apart
// from core/hist.h so that the config names it without the kernel's histogram layout.
#pragma once

#include <optional>

namespace cephscope {

// Which classic buckets a histogram is exported with: a series budget per OSD
// (docs/metrics.md#series-budget). The kernel's slots are the same for all three.
enum class Buckets {
  kFull,    // every slot: 1 us * 2^i, i = 0..24, then +Inf (28 series with _sum and _count)
  kCoarse,  // every other slot: 1 us * 4^j, j = 0..12, then +Inf (16 series)
  kNone,    // +Inf only: the count and the sum, so the rate and the mean (3 series)
};

// A collector's `buckets` setting, or `when_auto` where it is "auto" (unset).
inline Buckets buckets_setting(std::optional<Buckets> setting, Buckets when_auto) {
  return setting.value_or(when_auto);
}

}  // namespace cephscope
