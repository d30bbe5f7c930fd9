// Walking BPF maps from user space: per-CPU values are handed over for all CPUs at once, and
// every bpf(2) call is checked. An entry that goes away during a walk is not an error.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
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

// Calls fn(key, values of all CPUs) for each entry of a per-CPU hash map. Values come as a
// span of `possible_cpus()` elements.
template <typename Key, typename Value>
Status for_each_percpu(int map_fd,
                       const std::function<void(const Key&, std::span<const Value>)>& fn) {
  static_assert(sizeof(Value) % 8 == 0, "per-CPU values are 8-byte aligned");
  std::vector<Value> values(static_cast<std::size_t>(possible_cpus()));
  return for_each_key<Key>(map_fd, [&](const Key& k) {
    const int rc = bpf_map_lookup_elem(map_fd, &k, values.data());
    if (rc == 0) {
      fn(k, std::span<const Value>(values));
    }
    return rc;
  });
}

// Calls fn(key, value) for each entry of a plain (not per-CPU) hash map.
template <typename Key, typename Value>
Status for_each_entry(int map_fd, const std::function<void(const Key&, const Value&)>& fn) {
  Value value{};
  return for_each_key<Key>(map_fd, [&](const Key& k) {
    const int rc = bpf_map_lookup_elem(map_fd, &k, &value);
    if (rc == 0) {
      fn(k, value);
    }
    return rc;
  });
}

// Deletes every entry whose key fails `keep`; returns how many went.
template <typename Key>
Result<std::size_t> prune_keys(int map_fd, const std::function<bool(const Key&)>& keep) {
  std::vector<Key> doomed;
  Key key{};
  Key next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    if (!keep(next)) {
      doomed.push_back(next);
    }
    key = next;
    prev = &key;
  }
  if (errno != ENOENT) {
    return map_error("bpf_map_get_next_key", map_fd);
  }
  for (const auto& k : doomed) {
    if (bpf_map_delete_elem(map_fd, &k) != 0 && errno != ENOENT) {
      return map_error("bpf_map_delete_elem", map_fd);
    }
  }
  return doomed.size();
}

// Number of entries, counted by walking keys (bounded by the map's capacity).
Result<std::size_t> count_entries(const bpf_map* map);

// Calls fn(i, values of all CPUs) for the `count` entries of a per-CPU array from `first` on
// (i counts from 0): a slot of several series.
template <typename Value>
Status for_each_percpu_index(int map_fd, std::uint32_t first, std::uint32_t count,
                             const std::function<void(std::uint32_t, std::span<const Value>)>& fn) {
  static_assert(sizeof(Value) % 8 == 0, "per-CPU values are 8-byte aligned");
  std::vector<Value> values(static_cast<std::size_t>(possible_cpus()));
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t index = first + i;
    if (bpf_map_lookup_elem(map_fd, &index, values.data()) != 0) {
      return map_error("bpf_map_lookup_elem", map_fd);
    }
    fn(i, std::span<const Value>(values));
  }
  return ok_status();
}

// Zeroes the `count` entries of a per-CPU array of `value_size` from `first` on, on every CPU.
Status zero_percpu(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_size);

// Sums slot `index` of a per-CPU array of u64 counters.
Result<std::uint64_t> sum_percpu_u64(int map_fd, std::uint32_t index);

}  // namespace cephscope
