// The batched map walks a scrape reads the collectors' maps with (daemon/libbpf/maps.h), on
// real BPF maps: every entry once with its own values, on each CPU; a hash bucket larger than
// the batch asked for; and an array's range from any index. The walks a kernel without a batch
// for the map falls back to (a per-CPU array on Debian's 5.10, in its guest) give the
// same, on every kernel.
#include <bpf/bpf.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/unique_fd.h"
#include "libbpf/maps.h"

namespace cephscope {
namespace {

constexpr std::uint32_t kEntries = 1000;

UniqueFd make_map(bpf_map_type type, std::uint32_t max_entries) {
  UniqueFd fd{bpf_map_create(type, "test_batches", sizeof(std::uint32_t), sizeof(std::uint64_t),
                             max_entries, nullptr)};
  REQUIRE(fd.valid());
  return fd;
}

// Key K holds K * 10 + the CPU's index on each CPU (a per-CPU map) or K * 10 (a plain one).
std::vector<std::uint64_t> values_of(std::uint32_t key, std::size_t cpus) {
  std::vector<std::uint64_t> v(cpus);
  for (std::size_t cpu = 0; cpu < cpus; ++cpu) {
    v[cpu] = std::uint64_t{key} * 10 + cpu;
  }
  return v;
}

void fill(int fd, std::uint32_t count, std::size_t cpus) {
  for (std::uint32_t key = 0; key < count; ++key) {
    const auto v = values_of(key, cpus);
    REQUIRE(bpf_map_update_elem(fd, &key, v.data(), BPF_ANY) == 0);
  }
}

// Each of the kEntries keys was seen, once.
bool every_key_once(const std::map<std::uint32_t, int>& seen) {
  return seen.size() == kEntries &&
         std::all_of(seen.begin(), seen.end(), [](const auto& kv) { return kv.second == 1; });
}

}  // namespace

TEST_CASE("batched walks see every entry of a hash once, with its values on each CPU", "[maps]") {
  const auto cpus = static_cast<std::size_t>(possible_cpus());
  const UniqueFd plain = make_map(BPF_MAP_TYPE_HASH, kEntries);
  const UniqueFd percpu = make_map(BPF_MAP_TYPE_PERCPU_HASH, kEntries);
  fill(plain.get(), kEntries, 1);
  fill(percpu.get(), kEntries, cpus);

  std::map<std::uint32_t, int> seen;
  Status walked = for_each_entry<std::uint32_t, std::uint64_t>(
      plain.get(), [&](const std::uint32_t& key, const std::uint64_t& value) {
        ++seen[key];
        CHECK(value == std::uint64_t{key} * 10);
      });
  REQUIRE(walked.ok());
  CHECK(every_key_once(seen));

  seen.clear();
  walked = for_each_percpu<std::uint32_t, std::uint64_t>(
      percpu.get(), [&](const std::uint32_t& key, std::span<const std::uint64_t> values) {
        ++seen[key];
        REQUIRE(values.size() == cpus);
        CHECK(std::vector<std::uint64_t>(values.begin(), values.end()) == values_of(key, cpus));
      });
  REQUIRE(walked.ok());
  CHECK(every_key_once(seen));

  // Room for one entry per call: a bucket of two or more (1,000 keys in 1,024 buckets hold
  // many) is refused (ENOSPC) until the room grows to hold it; nothing is lost or seen twice.
  seen.clear();
  walked = for_each_batch(
      plain.get(), sizeof(std::uint32_t), sizeof(std::uint64_t),
      [&](const void* key, const void*) { ++seen[*static_cast<const std::uint32_t*>(key)]; }, 1);
  REQUIRE(walked.ok());
  CHECK(every_key_once(seen));

  // Key by key, as a kernel without batches for the map is walked.
  seen.clear();
  walked = for_each_by_key(percpu.get(), sizeof(std::uint32_t), cpus * sizeof(std::uint64_t),
                           [&](const void* key, const void* raw) {
                             const std::uint32_t k = *static_cast<const std::uint32_t*>(key);
                             ++seen[k];
                             std::vector<std::uint64_t> values(cpus);
                             std::memcpy(values.data(), raw, cpus * sizeof(std::uint64_t));
                             CHECK(values == values_of(k, cpus));
                           });
  REQUIRE(walked.ok());
  CHECK(every_key_once(seen));

  // An empty hash: no entry, no error.
  const UniqueFd empty = make_map(BPF_MAP_TYPE_LRU_HASH, 64);
  int calls = 0;
  REQUIRE(for_each_batch(empty.get(), sizeof(std::uint32_t), sizeof(std::uint64_t),
                         [&](const void*, const void*) { ++calls; })
              .ok());
  CHECK(calls == 0);
}

TEST_CASE("a per-CPU array's range is read whole from any index, and not past its end", "[maps]") {
  constexpr std::uint32_t kSlots = 64;
  const auto cpus = static_cast<std::size_t>(possible_cpus());
  const UniqueFd array = make_map(BPF_MAP_TYPE_PERCPU_ARRAY, kSlots);
  fill(array.get(), kSlots, cpus);

  struct Range {
    std::uint32_t first, count;
  };
  for (const Range r : {Range{0, 3}, Range{10, 5}, Range{60, 4}, Range{0, kSlots}}) {
    std::vector<std::uint32_t> indexes;
    const Status read = for_each_percpu_index<std::uint64_t>(
        array.get(), r.first, r.count, [&](std::uint32_t i, std::span<const std::uint64_t> values) {
          indexes.push_back(i);
          CHECK(std::vector<std::uint64_t>(values.begin(), values.end()) ==
                values_of(r.first + i, cpus));
        });
    REQUIRE(read.ok());
    CHECK(indexes.size() == r.count);

    // One lookup each, as where the kernel has no batch for per-CPU arrays.
    std::vector<std::uint64_t> each(cpus * r.count);
    REQUIRE(
        lookup_each(array.get(), r.first, r.count, cpus * sizeof(std::uint64_t), each.data()).ok());
    for (std::uint32_t i = 0; i < r.count; ++i) {
      CHECK(std::vector<std::uint64_t>(each.begin() + i * cpus, each.begin() + (i + 1) * cpus) ==
            values_of(r.first + i, cpus));
    }
  }

  // Two of four past the end: an error, never a short read taken for the whole.
  std::vector<std::uint64_t> room(cpus * 4);
  CHECK_FALSE(lookup_range(array.get(), 62, 4, cpus * sizeof(std::uint64_t), room.data()).ok());
  CHECK_FALSE(lookup_each(array.get(), 62, 4, cpus * sizeof(std::uint64_t), room.data()).ok());
}

}  // namespace cephscope
