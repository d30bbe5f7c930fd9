// The block collector's series slots (BLOCK_SERIES_SLOTS in bpf/block.h): a per-CPU array in
// which the programs find a (target, disk) series' stats by index instead of by a hash
// lookup. Series start in the hash; the daemon gives each one it finds there the slot at
// block_series_slot() while that slot is free (zeroed first), and takes the slots of expired
// targets back, handing over what they counted.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bpf/block.h"
#include "collectors/collector.h"
#include "core/result.h"

namespace cephscope {

void add_block_stats(block_stats& to, const block_stats& from);

class BlockSeries {
 public:
  using SeriesFn = std::function<void(const block_stats_key&, std::span<const block_stats>)>;

  BlockSeries(int owner_fd, int series_fd, int stats_fd);

  // Gives the series in the hash their slots, where free; returns how many were given.
  Result<std::size_t> claim();
  // Takes back the slots of targets not in `live`: fn gets what each op of them counted
  // (the per-device series keep it). Untracked series keep their slots.
  Result<std::size_t> release(const TargetIds& live, const SeriesFn& fn);
  // Calls fn for each op counted in a slot, with the values of every CPU.
  [[nodiscard]] Status for_each(const SeriesFn& fn) const;
  // Slots owned now; safe to read from any thread.
  [[nodiscard]] std::size_t owned() const { return owned_.load(std::memory_order_relaxed); }

 private:
  struct Owner {
    std::uint32_t target = 0;
    std::uint32_t dev = 0;
    bool taken = false;
  };
  Status set_owner(std::uint32_t slot, const Owner& owner);
  [[nodiscard]] Status read_slot(std::uint32_t slot, const SeriesFn& fn) const;

  int owner_fd_ = -1;
  int series_fd_ = -1;
  int stats_fd_ = -1;
  std::array<Owner, BLOCK_SERIES_SLOTS> owners_{};
  std::atomic<std::size_t> owned_{0};
};

}  // namespace cephscope
