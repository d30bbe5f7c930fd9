#include "collectors/block/block_series.h"

#include <bpf/bpf.h>

#include "core/hist.h"
#include "libbpf/maps.h"

namespace cephscope {

void add_block_stats(block_stats& to, const block_stats& from) {
  add_hist(to.submit, from.submit);
  add_hist(to.queue, from.queue);
  add_hist(to.device, from.device);
  to.bytes += from.bytes;
  to.errors += from.errors;
  to.merges += from.merges;
}

BlockSeries::BlockSeries(int owner_fd, int series_fd, int stats_fd)
    : owner_fd_(owner_fd), series_fd_(series_fd), stats_fd_(stats_fd) {}

Status BlockSeries::set_owner(std::uint32_t slot, const Owner& owner) {
  const std::uint64_t word = owner.taken ? block_series_word(owner.target, owner.dev) : 0;
  if (bpf_map_update_elem(owner_fd_, &slot, &word, BPF_ANY) != 0) {
    return map_error("bpf_map_update_elem", owner_fd_);
  }
  Owner& was = owners_.at(slot);
  if (was.taken != owner.taken) {
    if (owner.taken) {
      owned_.fetch_add(1, std::memory_order_relaxed);
    } else {
      owned_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  was = owner;
  return ok_status();
}

Result<std::size_t> BlockSeries::claim() {
  std::vector<Owner> wanted;
  Status walked = for_each_key<block_stats_key>(stats_fd_, [&](const block_stats_key& k) {
    const Owner& at = owners_.at(block_series_slot(k.target, k.dev));
    if (!at.taken) {
      wanted.push_back({k.target, k.dev, true});
    }
    return 0;
  });
  if (!walked.ok()) {
    return walked.error();
  }
  std::size_t given = 0;
  for (const Owner& owner : wanted) {
    const std::uint32_t slot = block_series_slot(owner.target, owner.dev);
    if (owners_.at(slot).taken) {
      continue;  // two series of one slot in the hash: the first keeps it
    }
    // Zeroed before the owner word names the series, so none of its requests adds to an
    // old count (the slot's last owner expired a TTL ago).
    if (Status zeroed =
            zero_percpu(series_fd_, slot * BLOCK_OP_COUNT, BLOCK_OP_COUNT, sizeof(block_stats));
        !zeroed.ok()) {
      return zeroed.error();
    }
    if (Status named = set_owner(slot, owner); !named.ok()) {
      return named.error();
    }
    ++given;
  }
  return given;
}

Status BlockSeries::read_slot(std::uint32_t slot, const SeriesFn& fn) const {
  const Owner& owner = owners_.at(slot);
  return for_each_percpu_index<block_stats>(
      series_fd_, slot * BLOCK_OP_COUNT, BLOCK_OP_COUNT,
      [&](std::uint32_t op, std::span<const block_stats> cpus) {
        std::uint64_t seen = 0;
        for (const auto& c : cpus) {
          seen += hist_count(c.device) + hist_count(c.submit) + c.bytes + c.merges + c.errors;
        }
        if (seen != 0) {
          block_stats_key k{};
          k.target = owner.target;
          k.dev = owner.dev;
          k.op = op;
          fn(k, cpus);
        }
      });
}

Result<std::size_t> BlockSeries::release(const TargetIds& live, const SeriesFn& fn) {
  std::size_t taken_back = 0;
  for (std::uint32_t slot = 0; slot < BLOCK_SERIES_SLOTS; ++slot) {
    const Owner& owner = owners_.at(slot);
    if (!owner.taken || owner.target == CEPHSCOPE_UNTRACKED || live.contains(owner.target)) {
      continue;
    }
    // Read, then freed: its target's requests ended a TTL ago, so nothing adds to it between.
    // Handed over once freed only, so that a failure leaves the counts in one place.
    std::vector<std::pair<block_stats_key, block_stats>> counted;
    Status read = read_slot(slot, [&](const block_stats_key& k, auto cpus) {
      block_stats sum{};
      for (const auto& c : cpus) {
        add_block_stats(sum, c);
      }
      counted.emplace_back(k, sum);
    });
    if (!read.ok()) {
      return read.error();
    }
    if (Status freed = set_owner(slot, Owner{}); !freed.ok()) {
      return freed.error();
    }
    for (const auto& [k, sum] : counted) {
      fn(k, std::span<const block_stats>(&sum, 1));
    }
    ++taken_back;
  }
  return taken_back;
}

Status BlockSeries::for_each(const SeriesFn& fn) const {
  for (std::uint32_t slot = 0; slot < BLOCK_SERIES_SLOTS; ++slot) {
    if (!owners_.at(slot).taken) {
      continue;
    }
    if (Status read = read_slot(slot, fn); !read.ok()) {
      return read;
    }
  }
  return ok_status();
}

}  // namespace cephscope
