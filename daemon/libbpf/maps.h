// Walking BPF maps from user space: per-CPU values are handed over for all CPUs at once, and
// every bpf(2) call is checked. An entry that goes away during a walk is not an error.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"

namespace cephscope {

int possible_cpus();

// A seed for the direct-mapped in-flight tables (inflight_slot in bpf/cephscope.h), drawn at
// each load from the kernel's random pool: no process can aim its keys at another's slots.
std::uint64_t random_seed();

// Every per-CPU hash is preallocated, within this many bytes of values per CPU: its entries are
// capped below what the object declares. Before 6.1 a tracing program's hash must be
// preallocated (the verifier warns, WARN_ONCE, or refuses on PREEMPT_RT). From 6.1 on, the
// run-time allocator (bpf_mem_alloc) refills its per-CPU caches later, from irq_work, so a burst
// of new series can fail to insert: the 6.1 guest lost one bio of 20 on a new md member's series.
// The hot series sit in per-CPU arrays; these hashes hold the rest, and an event that finds one
// full is counted stats_full.
inline constexpr std::size_t kPreallocatedHashBytesPerCpu = std::size_t{256} * 1024;
inline constexpr std::uint32_t kPreallocatedHashMinEntries = 64;

// Before OBJ loads, preallocates each of its per-CPU hashes within kPreallocatedHashBytesPerCpu.
// Maps another object already created (reused) keep theirs.
Status size_percpu_hashes(bpf_object* obj);

// The error of a failed bpf(2) call on a map; errno is read at once.
Error map_error(const char* call, int map_fd);

// Calls lookup(key) for each key of a hash map; lookup returns what bpf_map_lookup_elem did
// (0, or -1 with errno: ENOENT means the entry went meanwhile, and the walk goes on).
template <typename Key>
Status for_each_key(int map_fd, const std::function<int(const Key&)>& lookup) {
  Key key{};
  Key next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    if (lookup(next) != 0 && errno != ENOENT) {
      return map_error("bpf_map_lookup_elem", map_fd);
    }
    key = next;
    prev = &key;
  }
  if (errno != ENOENT) {  // ENOENT: past the last key
    return map_error("bpf_map_get_next_key", map_fd);
  }
  return ok_status();
}

// Calls fn(key, value) for each entry of a hash map (or every index of an array), read in
// batches (BPF_MAP_LOOKUP_BATCH): a scrape of 24 OSDs made 1,355 bpf(2) calls with a
// next-key and a lookup call per entry, where a batch per map or slot does. A map the kernel has
// no batch for (a per-CPU array on Debian's 5.10: ENOTSUPP) is walked key by key
// (for_each_by_key).
// VALUE_BYTES is an entry's value as the kernel copies it (every CPU's, 8-byte strides, for a
// per-CPU map). ROOM is the entries asked for per call; a hash map's batch holds whole buckets,
// so a bucket larger than the room is asked for again with room for it.
inline constexpr std::uint32_t kBatchEntries = 256;
Status for_each_batch(int map_fd, std::size_t key_size, std::size_t value_bytes,
                      const std::function<void(const void* key, const void* value)>& fn,
                      std::uint32_t room = kBatchEntries);

// for_each_batch's walk where the kernel has no batch: a next-key and a lookup call per entry.
Status for_each_by_key(int map_fd, std::size_t key_size, std::size_t value_bytes,
                       const std::function<void(const void* key, const void* value)>& fn);

// Calls fn(key, values of all CPUs) for each entry of a per-CPU hash map. Values come as a
// span of `possible_cpus()` elements.
template <typename Key, typename Value>
Status for_each_percpu(int map_fd,
                       const std::function<void(const Key&, std::span<const Value>)>& fn) {
  static_assert(sizeof(Value) % 8 == 0, "per-CPU values are 8-byte aligned");
  std::vector<Value> values(static_cast<std::size_t>(possible_cpus()));
  Key key{};
  return for_each_batch(map_fd, sizeof(Key), values.size() * sizeof(Value),
                        [&](const void* raw_key, const void* raw_values) {
                          std::memcpy(&key, raw_key, sizeof(Key));
                          std::memcpy(values.data(), raw_values, values.size() * sizeof(Value));
                          fn(key, std::span<const Value>(values));
                        });
}

// Calls fn(key, value) for each entry of a plain (not per-CPU) hash map.
template <typename Key, typename Value>
Status for_each_entry(int map_fd, const std::function<void(const Key&, const Value&)>& fn) {
  Key key{};
  Value value{};
  return for_each_batch(map_fd, sizeof(Key), sizeof(Value),
                        [&](const void* raw_key, const void* raw_value) {
                          std::memcpy(&key, raw_key, sizeof(Key));
                          std::memcpy(&value, raw_value, sizeof(Value));
                          fn(key, value);
                        });
}

// Deletes every entry whose key fails `keep`; returns how many went.
template <typename Key>
Result<std::size_t> prune_keys(int map_fd, const std::function<bool(const Key&)>& keep) {
  std::vector<Key> doomed;
  const Status walked = for_each_key<Key>(map_fd, [&](const Key& key) {
    if (!keep(key)) {
      doomed.push_back(key);
    }
    return 0;
  });
  if (!walked.ok()) {
    return walked.error();
  }
  for (const auto& k : doomed) {
    if (bpf_map_delete_elem(map_fd, &k) != 0 && errno != ENOENT) {
      return map_error("bpf_map_delete_elem", map_fd);
    }
  }
  return doomed.size();
}

// Number of entries of a hash map, counted in batches (bounded by the map's capacity).
Result<std::size_t> count_entries(const bpf_map* map);

// Reads the `count` entries of an array from `first` on into VALUES (count * VALUE_BYTES,
// VALUE_BYTES as for_each_batch's), in one batch, or one lookup each (lookup_each) where the
// kernel has no batch for the map.
Status lookup_range(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_bytes,
                    void* values);
Status lookup_each(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_bytes,
                   void* values);

// Calls fn(i, values of all CPUs) for the `count` entries of a per-CPU array from `first` on
// (i counts from 0): a slot of several series.
template <typename Value>
Status for_each_percpu_index(int map_fd, std::uint32_t first, std::uint32_t count,
                             const std::function<void(std::uint32_t, std::span<const Value>)>& fn) {
  static_assert(sizeof(Value) % 8 == 0, "per-CPU values are 8-byte aligned");
  const auto cpus = static_cast<std::size_t>(possible_cpus());
  std::vector<Value> values(cpus * count);
  if (Status read = lookup_range(map_fd, first, count, cpus * sizeof(Value), values.data());
      !read.ok()) {
    return read;
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    fn(i, std::span<const Value>(values).subspan(i * cpus, cpus));
  }
  return ok_status();
}

// Zeroes the `count` entries of a per-CPU array of `value_size` from `first` on, on every CPU.
Status zero_percpu(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_size);

// Sums slot `index` of a per-CPU array of u64 counters.
Result<std::uint64_t> sum_percpu_u64(int map_fd, std::uint32_t index);

}  // namespace cephscope
