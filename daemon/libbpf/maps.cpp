#include "libbpf/maps.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "core/reason.h"

namespace cephscope {

std::uint64_t random_seed() {
  std::random_device pool;  // reads getrandom(2) on Linux
  return (static_cast<std::uint64_t>(pool()) << 32) | pool();
}

int possible_cpus() {
  static const int n = libbpf_num_possible_cpus();
  return n > 0 ? n : 1;
}

Status size_percpu_hashes(bpf_object* obj) {
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, obj) {
    if (bpf_map__type(map) != BPF_MAP_TYPE_PERCPU_HASH || bpf_map__fd(map) >= 0) {
      continue;
    }
    const auto fit = static_cast<std::uint32_t>(
        kPreallocatedHashBytesPerCpu / std::max<std::uint32_t>(bpf_map__value_size(map), 1));
    const std::uint32_t entries =
        std::min(bpf_map__max_entries(map), std::max(fit, kPreallocatedHashMinEntries));
    int err = bpf_map__set_map_flags(
        map, bpf_map__map_flags(map) & ~static_cast<std::uint32_t>(BPF_F_NO_PREALLOC));
    if (err == 0) {
      err = bpf_map__set_max_entries(map, entries);
    }
    if (err != 0) {
      return error_with(Reason::kInternal, ErrorKind::kSystem,
                        std::string("cannot size the per-CPU hash ") + bpf_map__name(map) + ": " +
                            std::strerror(-err),
                        -err);
    }
  }
  return ok_status();
}

Error map_error(const char* call, int map_fd) {
  const int err = errno;
  return make_error(
      ErrorKind::kSystem,
      std::string(call) + " on map fd " + std::to_string(map_fd) + ": " + std::strerror(err), err);
}

Result<std::size_t> count_entries(const bpf_map* map) {
  const int fd = bpf_map__fd(map);
  const std::size_t key_size = bpf_map__key_size(map);
  std::vector<unsigned char> key(key_size);
  std::vector<unsigned char> next(key_size);
  const void* prev = nullptr;
  std::size_t n = 0;
  while (bpf_map_get_next_key(fd, prev, next.data()) == 0) {
    ++n;
    key.swap(next);
    prev = key.data();
  }
  if (errno != ENOENT) {
    return map_error("bpf_map_get_next_key", fd);
  }
  return n;
}

Status zero_percpu(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_size) {
  // the kernel copies each CPU's value at an 8-byte stride
  const std::size_t stride = (value_size + 7) / 8;
  const std::vector<std::uint64_t> zero(stride * static_cast<std::size_t>(possible_cpus()));
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t index = first + i;
    if (bpf_map_update_elem(map_fd, &index, zero.data(), BPF_ANY) != 0) {
      return map_error("bpf_map_update_elem", map_fd);
    }
  }
  return ok_status();
}

Result<std::uint64_t> sum_percpu_u64(int map_fd, std::uint32_t index) {
  std::vector<std::uint64_t> values(static_cast<std::size_t>(possible_cpus()));
  if (bpf_map_lookup_elem(map_fd, &index, values.data()) != 0) {
    return map_error("bpf_map_lookup_elem", map_fd);
  }
  std::uint64_t sum = 0;
  for (auto v : values) {
    sum += v;
  }
  return sum;
}

}  // namespace cephscope
