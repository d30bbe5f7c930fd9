// LayoutTable against real BPF maps: where a program looks (bpf/layouts.bpf.h) each process's
// layout must be, whichever process holds its slot.
#include <bpf/bpf.h>

#include <catch2/catch.hpp>
#include <cstdint>

#include "bpf/osd.h"
#include "collectors/layout_table.h"
#include "core/unique_fd.h"

namespace cephscope {
namespace {

constexpr std::uint32_t kSlots = 8;

struct Maps {
  UniqueFd slots{bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_slots", sizeof(std::uint32_t),
                                sizeof(osd_layout), kSlots, nullptr)};
  UniqueFd all{bpf_map_create(BPF_MAP_TYPE_HASH, "test_all", sizeof(std::uint32_t),
                              sizeof(osd_layout), kSlots, nullptr)};
};

// What the programs find for TGID: the slot when it holds TGID, else the hash; 0 when neither.
std::uint32_t found_target(const Maps& maps, std::uint32_t tgid) {
  osd_layout l{};
  const std::uint32_t slot = tgid % kSlots;
  if (bpf_map_lookup_elem(maps.slots.get(), &slot, &l) == 0 && l.tgid == tgid) {
    return l.target;
  }
  if (bpf_map_lookup_elem(maps.all.get(), &tgid, &l) == 0 && l.tgid == tgid) {
    return l.target;
  }
  return 0;
}

std::uint32_t slot_owner(const Maps& maps, std::uint32_t slot) {
  osd_layout l{};
  REQUIRE(bpf_map_lookup_elem(maps.slots.get(), &slot, &l) == 0);
  return l.tgid;
}

TEST_CASE("layouts: each process is found, the first of a slot in the array", "[kernel][layouts]") {
  Maps maps;
  REQUIRE(maps.slots.get() >= 0);
  REQUIRE(maps.all.get() >= 0);
  LayoutTable<osd_layout> table(maps.slots.get(), maps.all.get(), kSlots);
  osd_layout a{};
  a.target = 11;
  osd_layout b{};
  b.target = 22;
  // 100 and 108 share slot 4
  REQUIRE(table.put(100, a).ok());
  REQUIRE(table.put(108, b).ok());
  CHECK(slot_owner(maps, 4) == 100);
  CHECK(found_target(maps, 100) == 11);
  CHECK(found_target(maps, 108) == 22);

  // an update of the second one leaves the slot to the first
  b.detail = 1;
  REQUIRE(table.put(108, b).ok());
  CHECK(slot_owner(maps, 4) == 100);
  CHECK(found_target(maps, 108) == 22);

  // the first one goes: its slot is emptied, the second is still found
  REQUIRE(table.erase(100).ok());
  CHECK(slot_owner(maps, 4) == 0);
  CHECK(found_target(maps, 100) == 0);
  CHECK(found_target(maps, 108) == 22);

  // a new process of the slot takes it; erasing one never stored is not an error
  osd_layout c{};
  c.target = 33;
  REQUIRE(table.put(116, c).ok());
  CHECK(slot_owner(maps, 4) == 116);
  CHECK(found_target(maps, 116) == 33);
  CHECK(table.erase(999).ok());
  REQUIRE(table.erase(108).ok());
  CHECK(found_target(maps, 108) == 0);
  CHECK(found_target(maps, 116) == 33);
}

}  // namespace
}  // namespace cephscope
