// The series groups of the syscall and vfs collectors (OP_SERIES_GROUPS in bpf/cephscope.h,
// bpf/op_latency.bpf.h): a per-CPU array in which an exit program finds its target's
// op_stats by index instead of by a hash lookup. Target T can own group T mod
// OP_SERIES_GROUPS only; the daemon gives it out, zeroed, while it is free, and takes it back
// when T expires. A target whose group another holds is counted in the hash, as before.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bpf/cephscope.h"
#include "collectors/collector.h"
#include "core/result.h"

namespace cephscope {

class OpSeriesGroups {
 public:
  using SeriesFn =
      std::function<void(std::uint32_t target, std::uint32_t op, std::span<const op_stats>)>;

  // owner_fd: the ARRAY of OP_SERIES_GROUPS owners; series_fd: the PERCPU_ARRAY of
  // OP_SERIES_GROUPS * ops op_stats.
  OpSeriesGroups(int owner_fd, int series_fd, std::uint32_t ops);

  // Gives each target in `targets` its group, where that group is free. Returns how many
  // were given out.
  Result<std::size_t> claim(const std::vector<std::uint32_t>& targets);
  // Takes back the groups of targets not in `live`; returns how many.
  Result<std::size_t> release(const TargetIds& live);
  // Calls fn for each operation counted in an owned group, with the values of every CPU.
  [[nodiscard]] Status for_each(const SeriesFn& fn) const;
  // Groups owned now; safe to read from any thread.
  [[nodiscard]] std::size_t owned() const { return owned_.load(std::memory_order_relaxed); }

 private:
  Status set_owner(std::uint32_t group, std::uint32_t target);

  int owner_fd_ = -1;
  int series_fd_ = -1;
  std::uint32_t ops_ = 0;
  std::array<std::uint32_t, OP_SERIES_GROUPS> owners_{};
  std::atomic<std::size_t> owned_{0};
};

}  // namespace cephscope
