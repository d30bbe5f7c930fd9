#include "collectors/op_series_groups.h"

#include <bpf/bpf.h>

#include "core/hist.h"
#include "libbpf/maps.h"

namespace cephscope {

OpSeriesGroups::OpSeriesGroups(int owner_fd, int series_fd, std::uint32_t ops)
    : owner_fd_(owner_fd), series_fd_(series_fd), ops_(ops) {}

Status OpSeriesGroups::set_owner(std::uint32_t group, std::uint32_t target) {
  if (bpf_map_update_elem(owner_fd_, &group, &target, BPF_ANY) != 0) {
    return map_error("bpf_map_update_elem", owner_fd_);
  }
  std::uint32_t& owner = owners_.at(group);
  if ((owner == CEPHSCOPE_UNTRACKED) != (target == CEPHSCOPE_UNTRACKED)) {
    owned_.fetch_add(target == CEPHSCOPE_UNTRACKED ? -1 : 1, std::memory_order_relaxed);
  }
  owner = target;
  return ok_status();
}

Result<std::size_t> OpSeriesGroups::claim(const std::vector<std::uint32_t>& targets) {
  std::size_t given = 0;
  for (const std::uint32_t target : targets) {
    const std::uint32_t group = op_series_group(target);
    if (target == CEPHSCOPE_UNTRACKED || owners_.at(group) != CEPHSCOPE_UNTRACKED) {
      continue;
    }
    // Zeroed before its owner is named, so no program of the new owner adds to an old count
    // (a program of the last owner, expired for a TTL, has long finished).
    if (Status zeroed = zero_percpu(series_fd_, group * ops_, ops_, sizeof(op_stats));
        !zeroed.ok()) {
      return zeroed.error();
    }
    if (Status named = set_owner(group, target); !named.ok()) {
      return named.error();
    }
    ++given;
  }
  return given;
}

Result<std::size_t> OpSeriesGroups::release(const TargetIds& live) {
  std::size_t taken_back = 0;
  for (std::uint32_t group = 0; group < OP_SERIES_GROUPS; ++group) {
    const std::uint32_t target = owners_.at(group);
    if (target == CEPHSCOPE_UNTRACKED || live.contains(target)) {
      continue;
    }
    if (Status freed = set_owner(group, CEPHSCOPE_UNTRACKED); !freed.ok()) {
      return freed.error();
    }
    ++taken_back;
  }
  return taken_back;
}

Status OpSeriesGroups::for_each(const SeriesFn& fn) const {
  for (std::uint32_t group = 0; group < OP_SERIES_GROUPS; ++group) {
    const std::uint32_t target = owners_.at(group);
    if (target == CEPHSCOPE_UNTRACKED) {
      continue;
    }
    Status read = for_each_percpu_index<op_stats>(
        series_fd_, group * ops_, ops_, [&](std::uint32_t op, std::span<const op_stats> cpus) {
          std::uint64_t calls = 0;
          for (const auto& c : cpus) {
            calls += hist_count(c.latency);  // every call adds to its latency
          }
          if (calls != 0) {
            fn(target, op, cpus);
          }
        });
    if (!read.ok()) {
      return read;
    }
  }
  return ok_status();
}

}  // namespace cephscope
