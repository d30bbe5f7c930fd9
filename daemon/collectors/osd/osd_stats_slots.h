// The OSD processes' stats slots (bpf/osd.h, osd_stats_slots): a per-CPU array in which the
// end-of-op programs find a process's series by index instead of by a hash lookup. Each
// attached process takes a slot while one is free; its layout names the slot once it is
// zeroed. When the process is gone (its probes detached), what the slot counted is kept per
// series, so its target's counters never go back, and the slot returns to the end of the
// free list. The bluestore layer's counters (osd_bs_slots) follow the same slots.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "bpf/osd.h"
#include "collectors/collector.h"
#include "core/result.h"

namespace cephscope {

class OsdStatsSlots {
 public:
  using SeriesFn = std::function<void(const osd_stats_key&, std::span<const osd_stats>)>;

  using StoreFn =
      std::function<void(std::uint32_t target, std::uint32_t kind, std::span<const osd_bs_bytes>)>;

  // ARRAY_FD: osd_stats_slots; STORE_FD: osd_bs_slots.
  OsdStatsSlots(int array_fd, int store_fd);

  // A zeroed slot for a process of TARGET, as its layout's stats_slot (1 + the slot); 0 when
  // none is free (its series go to the hash).
  Result<std::uint32_t> take(std::uint32_t target);
  // The process of STATS_SLOT is gone and its probes are detached: the slot's counts are kept
  // under its target, and the slot is free again.
  Status release(std::uint32_t stats_slot);
  // Calls fn for each series counted in a slot taken now (values of every CPU) and for the
  // counts kept from released ones (one value). Series never hit are skipped.
  Status for_each(const SeriesFn& fn) const;
  // The same for the bluestore layer's counters, per target and kind.
  Status for_each_store(const StoreFn& fn) const;
  // Forgets the kept counts of targets that expired.
  void prune(const TargetIds& live);

 private:
  Status read_slot(std::uint32_t slot, std::uint32_t target, const SeriesFn& fn) const;
  Status read_store(std::uint32_t slot, std::uint32_t target, const StoreFn& fn) const;

  int fd_ = -1;
  int store_fd_ = -1;
  mutable std::mutex mu_;
  std::deque<std::uint32_t> free_;                // slots, least recently released first
  std::map<std::uint32_t, std::uint32_t> taken_;  // slot -> target
  std::map<std::tuple<std::uint32_t, std::uint8_t, std::uint8_t>, osd_stats> kept_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, osd_bs_bytes> kept_store_;
};

}  // namespace cephscope
