// Reading BPF maps at scrape time: per-CPU values are summed over CPUs here, once per scrape.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace cephscope {

int possible_cpus();

// Calls fn(key, values of all CPUs) for each entry of a per-CPU hash map. Values come as a
// span of `possible_cpus()` elements. Entries deleted concurrently are skipped.
template <typename Key, typename Value>
void for_each_percpu(int map_fd,
                     const std::function<void(const Key&, std::span<const Value>)>& fn) {
  static_assert(sizeof(Value) % 8 == 0, "per-CPU values are 8-byte aligned");
  const int ncpu = possible_cpus();
  std::vector<Value> values(static_cast<std::size_t>(ncpu));
  Key key{};
  Key next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    if (bpf_map_lookup_elem(map_fd, &next, values.data()) == 0) {
      fn(next, std::span<const Value>(values));
    }
    key = next;
    prev = &key;
  }
}

// Deletes every entry whose key fails `keep`; returns how many went.
template <typename Key>
std::size_t prune_keys(int map_fd, const std::function<bool(const Key&)>& keep) {
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
  for (const auto& k : doomed) {
    bpf_map_delete_elem(map_fd, &k);
  }
  return doomed.size();
}

// Number of entries, counted by walking keys (bounded by the map's capacity).
std::size_t count_entries(const bpf_map* map);

// Sums slot `index` of a per-CPU array of u64 counters.
std::uint64_t sum_percpu_u64(int map_fd, std::uint32_t index);

}  // namespace cephscope
