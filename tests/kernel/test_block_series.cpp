// BlockSeries against real BPF maps shaped as block.bpf.c's (block_stats, block_series_owner,
// block_series): series found in the hash get their slots, with the owner word the programs
// compare; what a slot counts is scraped with the hash's; an expired target's slots hand their
// counts over and come round again zeroed; untracked series keep theirs.
#include <bpf/bpf.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "bpf/block.h"
#include "collectors/block/block_series.h"
#include "core/unique_fd.h"
#include "libbpf/maps.h"

namespace cephscope {
namespace {

struct Maps {
  UniqueFd stats{bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "test_blk_stats", sizeof(block_stats_key),
                                sizeof(block_stats), 64, nullptr)};
  UniqueFd owner{bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_blk_owner", sizeof(std::uint32_t),
                                sizeof(std::uint64_t), BLOCK_SERIES_SLOTS, nullptr)};
  UniqueFd series{bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "test_blk_series",
                                 sizeof(std::uint32_t), sizeof(block_stats),
                                 BLOCK_SERIES_SLOTS* BLOCK_OP_COUNT, nullptr)};
};

block_stats_key key(std::uint32_t target, std::uint32_t dev, std::uint32_t op) {
  block_stats_key k{};
  k.target = target;
  k.dev = dev;
  k.op = op;
  return k;
}

// A series as the programs start it: an entry in the hash with BYTES on one CPU.
void in_hash(const Maps& m, const block_stats_key& k, std::uint64_t bytes) {
  std::vector<block_stats> cpus(static_cast<std::size_t>(possible_cpus()));
  cpus[0].bytes = bytes;
  REQUIRE(bpf_map_update_elem(m.stats.get(), &k, cpus.data(), BPF_ANY) == 0);
}

std::uint64_t owner_word(const Maps& m, const block_stats_key& k) {
  const std::uint32_t slot = block_series_slot(k.target, k.dev);
  std::uint64_t word = 0;
  REQUIRE(bpf_map_lookup_elem(m.owner.get(), &slot, &word) == 0);
  return word;
}

// What a program does once the owner word names its series: it adds to the slot.
void in_slot(const Maps& m, const block_stats_key& k, std::uint64_t bytes) {
  REQUIRE(owner_word(m, k) == block_series_word(k.target, k.dev));
  const std::uint32_t index = block_series_slot(k.target, k.dev) * BLOCK_OP_COUNT + k.op;
  std::vector<block_stats> cpus(static_cast<std::size_t>(possible_cpus()));
  REQUIRE(bpf_map_lookup_elem(m.series.get(), &index, cpus.data()) == 0);
  cpus.back().bytes += bytes;
  REQUIRE(bpf_map_update_elem(m.series.get(), &index, cpus.data(), BPF_ANY) == 0);
}

std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint64_t> slot_bytes(
    const BlockSeries& series) {
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint64_t> out;
  REQUIRE(series
              .for_each([&](const block_stats_key& k, std::span<const block_stats> cpus) {
                for (const auto& c : cpus) {
                  out[{k.target, k.dev, k.op}] += c.bytes;
                }
              })
              .ok());
  return out;
}

TEST_CASE(
    "block series slots: given to series in the hash, handed over when their target "
    "expires",
    "[kernel][block]") {
  const Maps m;
  REQUIRE(m.stats.get() >= 0);
  REQUIRE(m.owner.get() >= 0);
  REQUIRE(m.series.get() >= 0);
  BlockSeries series(m.owner.get(), m.series.get(), m.stats.get());
  constexpr std::uint32_t kDisk = (8U << 20) | 16U;  // sdb
  const auto tracked = key(7, kDisk, BLOCK_OP_WRITE);
  const auto untracked = key(CEPHSCOPE_UNTRACKED, kDisk, BLOCK_OP_WRITE);
  REQUIRE(block_series_slot(7, kDisk) != block_series_slot(CEPHSCOPE_UNTRACKED, kDisk));

  CHECK(owner_word(m, tracked) == 0);  // nothing in the hash yet, nothing given
  in_hash(m, tracked, 4096);
  in_hash(m, untracked, 8192);
  const auto given = series.claim();
  REQUIRE(given.ok());
  CHECK(*given == 2);
  CHECK(series.owned() == 2);
  CHECK(owner_word(m, tracked) == block_series_word(7, kDisk));
  const auto again = series.claim();  // already theirs
  REQUIRE(again.ok());
  CHECK(*again == 0);

  in_slot(m, tracked, 512);
  in_slot(m, untracked, 1024);
  auto seen = slot_bytes(series);
  CHECK(seen.size() == 2);  // ops never counted are not handed over
  CHECK(seen[{7, kDisk, BLOCK_OP_WRITE}] == 512);
  CHECK(seen[{CEPHSCOPE_UNTRACKED, kDisk, BLOCK_OP_WRITE}] == 1024);

  // target 7 expires: its slot's counts are handed over and the slot is free; the untracked
  // series keeps its own
  std::uint64_t handed = 0;
  const auto freed = series.release({}, [&](const block_stats_key& k, auto counted) {
    CHECK(k.target == 7);
    for (const auto& c : counted) {
      handed += c.bytes;
    }
  });
  REQUIRE(freed.ok());
  CHECK(*freed == 1);
  CHECK(handed == 512);
  CHECK(series.owned() == 1);
  CHECK(owner_word(m, tracked) == 0);
  seen = slot_bytes(series);
  CHECK(seen.count({7, kDisk, BLOCK_OP_WRITE}) == 0);

  // the slot comes round again (the hash still holds target 7's entry): from zero
  REQUIRE(series.claim().ok());
  CHECK(owner_word(m, tracked) == block_series_word(7, kDisk));
  seen = slot_bytes(series);
  CHECK(seen.count({7, kDisk, BLOCK_OP_WRITE}) == 0);
}

}  // namespace
}  // namespace cephscope
