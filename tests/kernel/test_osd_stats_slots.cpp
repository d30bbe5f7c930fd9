// OsdStatsSlots against a real per-CPU BPF array shaped as osd_stats_slots (bpf/osd.h): what a
// program folds into a process's slot is scraped while the process lives and kept under its
// target when it goes; a slot comes back zeroed; without a free slot the series go to the hash.
// The bluestore layer's counters (osd_bs_slots) follow the same slots.
#include <bpf/bpf.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "bpf/osd.h"
#include "collectors/osd/osd_series.h"
#include "collectors/osd/osd_stats_slots.h"
#include "core/hist.h"
#include "core/unique_fd.h"
#include "libbpf/maps.h"

namespace cephscope {
namespace {

UniqueFd slots_map() {
  return UniqueFd(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "test_osd_slots", sizeof(std::uint32_t),
                                 sizeof(osd_stats), OSD_STATS_SLOTS * OSD_SLOT_SERIES, nullptr));
}

UniqueFd store_map() {
  return UniqueFd(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "test_osd_bs", sizeof(std::uint32_t),
                                 sizeof(osd_bs_bytes), OSD_STATS_SLOTS * OSD_BS_KIND_COUNT,
                                 nullptr));
}

// What osd_bs_aio_write does for N device writes of BYTES each of KIND in STATS_SLOT.
void count_writes(int fd, std::uint32_t stats_slot, std::uint32_t kind, std::uint64_t n,
                  std::uint64_t bytes) {
  const std::uint32_t index = osd_bs_slot_index(stats_slot, kind);
  std::vector<osd_bs_bytes> cpus(static_cast<std::size_t>(possible_cpus()));
  REQUIRE(bpf_map_lookup_elem(fd, &index, cpus.data()) == 0);
  auto& c = cpus[cpus.size() > 1 ? 1 : 0];
  c.writes += n;
  c.bytes += n * bytes;
  REQUIRE(bpf_map_update_elem(fd, &index, cpus.data(), BPF_ANY) == 0);
}

// (target, kind) -> (writes, bytes) of the bluestore layer.
std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::uint64_t, std::uint64_t>>
scrape_store(const OsdStatsSlots& slots) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::uint64_t, std::uint64_t>> out;
  REQUIRE(slots
              .for_each_store([&](std::uint32_t target, std::uint32_t kind,
                                  std::span<const osd_bs_bytes> cpus) {
                auto& [writes, bytes] = out[{target, kind}];
                for (const auto& c : cpus) {
                  writes += c.writes;
                  bytes += c.bytes;
                }
              })
              .ok());
  return out;
}

// What a program does for N ops of KIND/OP in STATS_SLOT (1 + the slot), on CPU 1 when there
// is one: every fold adds the whole op, and ops of 2 us add to the whole op's slot 1.
void fold(int fd, std::uint32_t stats_slot, std::uint32_t kind, std::uint32_t op, std::uint64_t n) {
  const std::uint32_t index = (stats_slot - 1) * OSD_SLOT_SERIES + osd_slot_series(kind, op);
  std::vector<osd_stats> cpus(static_cast<std::size_t>(possible_cpus()));
  REQUIRE(bpf_map_lookup_elem(fd, &index, cpus.data()) == 0);
  auto& c = cpus[cpus.size() > 1 ? 1 : 0];
  c.slots[OSD_STAGE_WHOLE][1] += n;
  c.sum_ns[OSD_STAGE_WHOLE] += n * 2000;
  c.bytes_in += n * 4096;
  REQUIRE(bpf_map_update_elem(fd, &index, cpus.data(), BPF_ANY) == 0);
}

// (target, kind, op) -> (ops, bytes in), summed over what for_each hands over.
std::map<std::tuple<std::uint32_t, int, int>, std::pair<std::uint64_t, std::uint64_t>> scrape(
    const OsdStatsSlots& slots) {
  std::map<std::tuple<std::uint32_t, int, int>, std::pair<std::uint64_t, std::uint64_t>> out;
  REQUIRE(slots
              .for_each([&](const osd_stats_key& k, std::span<const osd_stats> cpus) {
                auto& [ops, bytes] = out[{k.target, k.kind, k.op}];
                for (const auto& c : cpus) {
                  ops += folds(c);
                  bytes += c.bytes_in;
                }
              })
              .ok());
  return out;
}

TEST_CASE("osd stats slots: series scraped live, kept after the process", "[kernel][osd_slots]") {
  const UniqueFd fd = slots_map();
  const UniqueFd store = store_map();
  REQUIRE(fd.get() >= 0);
  REQUIRE(store.get() >= 0);
  OsdStatsSlots slots(fd.get(), store.get());

  const auto a = slots.take(7);
  const auto b = slots.take(9);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(*a != 0);
  REQUIRE(*b != 0);
  CHECK(*a != *b);
  fold(fd.get(), *a, OSD_KIND_OP, OSD_OP_WRITE, 5);
  fold(fd.get(), *a, OSD_KIND_SUBOP, OSD_OP_WRITE, 3);
  fold(fd.get(), *b, OSD_KIND_OP, OSD_OP_READ, 2);

  auto seen = scrape(slots);
  CHECK(seen.size() == 3);  // series never hit are not handed over
  CHECK(seen[{7, OSD_KIND_OP, OSD_OP_WRITE}] == std::pair<std::uint64_t, std::uint64_t>{5, 20480});
  CHECK(seen[{7, OSD_KIND_SUBOP, OSD_OP_WRITE}].first == 3);
  CHECK(seen[{9, OSD_KIND_OP, OSD_OP_READ}].first == 2);

  // target 7's process goes; a new one of the same target counts on from there
  REQUIRE(slots.release(*a).ok());
  const auto again = slots.take(7);
  REQUIRE(again.ok());
  REQUIRE(*again != 0);
  fold(fd.get(), *again, OSD_KIND_OP, OSD_OP_WRITE, 4);
  seen = scrape(slots);
  std::uint64_t writes = 0;
  REQUIRE(slots
              .for_each([&](const osd_stats_key& k, std::span<const osd_stats> cpus) {
                if (k.target == 7 && k.kind == OSD_KIND_OP && k.op == OSD_OP_WRITE) {
                  for (const auto& c : cpus) {
                    writes += folds(c);
                  }
                }
              })
              .ok());
  CHECK(writes == 9);

  // the expired target's kept counts go; the live ones stay
  slots.prune({9});
  seen = scrape(slots);
  CHECK(seen.count({7, OSD_KIND_OP, OSD_OP_WRITE}) == 1);  // still in a taken slot: 4
  CHECK(seen[{7, OSD_KIND_OP, OSD_OP_WRITE}].first == 4);
  CHECK(seen[{9, OSD_KIND_OP, OSD_OP_READ}].first == 2);
}

TEST_CASE("osd stats slots: a reused slot starts at zero; none free means the hash",
          "[kernel][osd_slots]") {
  const UniqueFd fd = slots_map();
  const UniqueFd store = store_map();
  REQUIRE(fd.get() >= 0);
  REQUIRE(store.get() >= 0);
  OsdStatsSlots slots(fd.get(), store.get());

  std::vector<std::uint32_t> taken;
  for (std::uint32_t i = 0; i < OSD_STATS_SLOTS; ++i) {
    const auto s = slots.take(100 + i);
    REQUIRE(s.ok());
    REQUIRE(*s != 0);
    taken.push_back(*s);
    fold(fd.get(), *s, OSD_KIND_OP, OSD_OP_WRITE, 1);
  }
  const auto none = slots.take(999);
  REQUIRE(none.ok());
  CHECK(*none == 0);  // the process's layout names no slot: its programs use the hash

  REQUIRE(slots.release(taken[0]).ok());
  const auto reused = slots.take(500);
  REQUIRE(reused.ok());
  CHECK(*reused == taken[0]);
  auto seen = scrape(slots);
  CHECK(seen.count({500, OSD_KIND_OP, OSD_OP_WRITE}) == 0);  // zeroed: nothing of target 100
  CHECK(seen[{100, OSD_KIND_OP, OSD_OP_WRITE}].first == 1);  // kept from the released slot
  CHECK(slots.release(0).ok());                              // no slot: nothing to do
}

TEST_CASE("osd stats slots: the bluestore layer's counters live, kept and zeroed with the slot",
          "[kernel][osd_slots]") {
  const UniqueFd fd = slots_map();
  const UniqueFd store = store_map();
  REQUIRE(fd.get() >= 0);
  REQUIRE(store.get() >= 0);
  OsdStatsSlots slots(fd.get(), store.get());

  const auto a = slots.take(7);
  const auto b = slots.take(9);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  count_writes(store.get(), *a, OSD_BS_DATA, 10, 4096);
  count_writes(store.get(), *a, OSD_BS_WAL, 3, 8192);
  count_writes(store.get(), *b, OSD_BS_DEFERRED, 2, 4096);
  auto seen = scrape_store(slots);
  CHECK(seen.size() == 3);  // kinds never written are not handed over
  CHECK(seen[{7, OSD_BS_DATA}] == std::pair<std::uint64_t, std::uint64_t>{10, 40960});
  CHECK(seen[{7, OSD_BS_WAL}] == std::pair<std::uint64_t, std::uint64_t>{3, 24576});
  CHECK(seen[{9, OSD_BS_DEFERRED}] == std::pair<std::uint64_t, std::uint64_t>{2, 8192});

  // target 7's process goes: its counts are kept; its slot comes back zeroed for another
  REQUIRE(slots.release(*a).ok());
  const auto c = slots.take(11);
  REQUIRE(c.ok());
  CHECK(*c != 0);
  count_writes(store.get(), *c, OSD_BS_DATA, 1, 4096);
  seen = scrape_store(slots);
  CHECK(seen[{7, OSD_BS_DATA}] == std::pair<std::uint64_t, std::uint64_t>{10, 40960});
  CHECK(seen[{11, OSD_BS_DATA}] == std::pair<std::uint64_t, std::uint64_t>{1, 4096});

  slots.prune({9, 11});
  seen = scrape_store(slots);
  CHECK(seen.count({7, OSD_BS_DATA}) == 0);
  CHECK(seen[{9, OSD_BS_DEFERRED}].first == 2);
}

}  // namespace
}  // namespace cephscope
