#include "collectors/osd/osd_stats_slots.h"

#include <bpf/bpf.h>

#include <cerrno>

#include "collectors/osd/osd_series.h"
#include "core/hist.h"
#include "libbpf/maps.h"

namespace cephscope {
namespace {

// The key a slot's series I stands for (osd_slot_series in bpf/osd.h).
osd_stats_key series_key(std::uint32_t target, std::uint32_t i) {
  osd_stats_key k{};
  k.target = target;
  k.kind = i == OSD_OP_COUNT ? OSD_KIND_SUBOP : OSD_KIND_OP;
  k.op = static_cast<std::uint8_t>(i == OSD_OP_COUNT ? std::uint32_t{OSD_OP_WRITE} : i);
  return k;
}

}  // namespace

OsdStatsSlots::OsdStatsSlots(int array_fd, int store_fd) : fd_(array_fd), store_fd_(store_fd) {
  for (std::uint32_t s = 0; s < OSD_STATS_SLOTS; ++s) {
    free_.push_back(s);
  }
}

Result<std::uint32_t> OsdStatsSlots::take(std::uint32_t target) {
  std::lock_guard lock(mu_);
  if (free_.empty()) {
    return 0U;
  }
  const std::uint32_t slot = free_.front();
  // Zeroed here, not at release: a program that read the old layout just before it changed
  // has long finished by the time the slot comes round again.
  if (Status zeroed = zero_percpu(fd_, slot * OSD_SLOT_SERIES, OSD_SLOT_SERIES, sizeof(osd_stats));
      !zeroed.ok()) {
    return zeroed.error();
  }
  if (Status zeroed =
          zero_percpu(store_fd_, slot * OSD_BS_KIND_COUNT, OSD_BS_KIND_COUNT, sizeof(osd_bs_bytes));
      !zeroed.ok()) {
    return zeroed.error();
  }
  free_.pop_front();
  taken_[slot] = target;
  return slot + 1;
}

Status OsdStatsSlots::read_slot(std::uint32_t slot, std::uint32_t target,
                                const SeriesFn& fn) const {
  return for_each_percpu_index<osd_stats>(fd_, slot * OSD_SLOT_SERIES, OSD_SLOT_SERIES,
                                          [&](std::uint32_t i, std::span<const osd_stats> cpus) {
                                            std::uint64_t hits = 0;
                                            for (const auto& c : cpus) {
                                              hits += folds(c);
                                            }
                                            if (hits != 0) {
                                              fn(series_key(target, i), cpus);
                                            }
                                          });
}

Status OsdStatsSlots::read_store(std::uint32_t slot, std::uint32_t target,
                                 const StoreFn& fn) const {
  return for_each_percpu_index<osd_bs_bytes>(
      store_fd_, slot * OSD_BS_KIND_COUNT, OSD_BS_KIND_COUNT,
      [&](std::uint32_t kind, std::span<const osd_bs_bytes> cpus) {
        std::uint64_t writes = 0;
        for (const auto& c : cpus) {
          writes += c.writes;
        }
        if (writes != 0) {
          fn(target, kind, cpus);
        }
      });
}

Status OsdStatsSlots::release(std::uint32_t stats_slot) {
  std::lock_guard lock(mu_);
  const std::uint32_t slot = stats_slot - 1;
  const auto it = taken_.find(slot);
  if (stats_slot == 0 || it == taken_.end()) {
    return ok_status();
  }
  Status read = read_slot(slot, it->second, [&](const osd_stats_key& k, auto cpus) {
    auto& kept = kept_[{k.target, k.kind, k.op}];
    for (const auto& c : cpus) {
      add_stats(kept, c);
    }
  });
  if (!read.ok()) {
    return read;  // the slot stays taken: its counts are still there for the scrapes
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, osd_bs_bytes> store;
  read = read_store(slot, it->second, [&](std::uint32_t target, std::uint32_t kind, auto cpus) {
    auto& kept = store[{target, kind}];
    for (const auto& c : cpus) {
      kept.bytes += c.bytes;
      kept.writes += c.writes;
    }
  });
  if (!read.ok()) {
    return read;
  }
  for (const auto& [key, v] : store) {
    kept_store_[key].bytes += v.bytes;
    kept_store_[key].writes += v.writes;
  }
  taken_.erase(it);
  free_.push_back(slot);
  return ok_status();
}

Status OsdStatsSlots::for_each(const SeriesFn& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [slot, target] : taken_) {
    if (Status read = read_slot(slot, target, fn); !read.ok()) {
      return read;
    }
  }
  for (const auto& [key, stats] : kept_) {
    osd_stats_key k{};
    k.target = std::get<0>(key);
    k.kind = std::get<1>(key);
    k.op = std::get<2>(key);
    fn(k, std::span<const osd_stats>(&stats, 1));
  }
  return ok_status();
}

Status OsdStatsSlots::for_each_store(const StoreFn& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [slot, target] : taken_) {
    if (Status read = read_store(slot, target, fn); !read.ok()) {
      return read;
    }
  }
  for (const auto& [key, v] : kept_store_) {
    fn(key.first, key.second, std::span<const osd_bs_bytes>(&v, 1));
  }
  return ok_status();
}

void OsdStatsSlots::prune(const TargetIds& live) {
  std::lock_guard lock(mu_);
  std::erase_if(kept_, [&](const auto& entry) { return !live.contains(std::get<0>(entry.first)); });
  std::erase_if(kept_store_, [&](const auto& entry) { return !live.contains(entry.first.first); });
}

}  // namespace cephscope
