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
  return errno_error(std::string(call) + " on map fd " + std::to_string(map_fd), err);
}

namespace {

// What a kernel without a batch for the map type answers (ENOTSUPP, 524, is the kernel's own
// and has no name in user space).
bool no_batch(int err) {
  constexpr int kKernelNotSupported = 524;
  return err == kKernelNotSupported || err == EOPNOTSUPP || err == EINVAL;
}

}  // namespace

Status for_each_by_key(int map_fd, std::size_t key_size, std::size_t value_bytes,
                       const std::function<void(const void* key, const void* value)>& fn) {
  std::vector<unsigned char> key(key_size);
  std::vector<unsigned char> next(key_size);
  std::vector<unsigned char> value(value_bytes);
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, next.data()) == 0) {
    if (bpf_map_lookup_elem(map_fd, next.data(), value.data()) == 0) {
      fn(next.data(), value.data());
    } else if (errno != ENOENT) {  // ENOENT: the entry went meanwhile
      return map_error("bpf_map_lookup_elem", map_fd);
    }
    key.swap(next);
    prev = key.data();
  }
  if (errno != ENOENT) {  // ENOENT: past the last key
    return map_error("bpf_map_get_next_key", map_fd);
  }
  return ok_status();
}

Status for_each_batch(int map_fd, std::size_t key_size, std::size_t value_bytes,
                      const std::function<void(const void* key, const void* value)>& fn,
                      std::uint32_t room) {
  // The kernel's place in the walk: a bucket index (u32) for a hash map, the last key for an
  // array.
  std::vector<unsigned char> token_in(std::max<std::size_t>(key_size, 8));
  std::vector<unsigned char> token_out(token_in.size());
  room = std::max<std::uint32_t>(room, 1);
  std::vector<unsigned char> keys(room * key_size);
  std::vector<unsigned char> values(room * value_bytes);
  bool first = true;
  for (;;) {
    std::uint32_t count = room;
    const int rc = bpf_map_lookup_batch(map_fd, first ? nullptr : token_in.data(), token_out.data(),
                                        keys.data(), values.data(), &count, nullptr);
    const int err = rc != 0 ? errno : 0;
    if (err == ENOSPC && count == 0) {  // a bucket larger than the room
      room *= 2;
      keys.resize(room * key_size);
      values.resize(room * value_bytes);
      continue;
    }
    if (first && no_batch(err)) {
      return for_each_by_key(map_fd, key_size, value_bytes, fn);
    }
    if (err != 0 && err != ENOENT) {
      return map_error("bpf_map_lookup_batch", map_fd);
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      fn(keys.data() + i * key_size, values.data() + i * value_bytes);
    }
    if (err == ENOENT) {  // past the last entry
      return ok_status();
    }
    token_in.swap(token_out);
    first = false;
  }
}

Status lookup_each(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_bytes,
                   void* values) {
  auto* out = static_cast<unsigned char*>(values);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t index = first + i;
    if (bpf_map_lookup_elem(map_fd, &index, out + i * value_bytes) != 0) {
      return map_error("bpf_map_lookup_elem", map_fd);
    }
  }
  return ok_status();
}

Status lookup_range(int map_fd, std::uint32_t first, std::uint32_t count, std::size_t value_bytes,
                    void* values) {
  if (count == 0) {
    return ok_status();
  }
  // A batch of an array starts after its token's index: first - 1, or no token for index 0.
  std::uint32_t before = first - 1;  // the kernel reads it only
  std::uint32_t last = 0;
  std::vector<std::uint32_t> keys(count);
  std::uint32_t got = count;
  if (bpf_map_lookup_batch(map_fd, first == 0 ? nullptr : &before, &last, keys.data(), values, &got,
                           nullptr) != 0) {
    const int err = errno;
    if (no_batch(err)) {
      return lookup_each(map_fd, first, count, value_bytes, values);
    }
    if (err != ENOENT) {
      return map_error("bpf_map_lookup_batch", map_fd);
    }
  }
  if (got != count) {
    return make_error(ErrorKind::kSystem,
                      "bpf_map_lookup_batch on map fd " + std::to_string(map_fd) + ": " +
                          std::to_string(got) + " of " + std::to_string(count) + " entries from " +
                          std::to_string(first),
                      ERANGE);
  }
  return ok_status();
}

Result<std::size_t> count_entries(const bpf_map* map) {
  const auto type = bpf_map__type(map);
  std::size_t value_bytes = bpf_map__value_size(map);
  if (type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH ||
      type == BPF_MAP_TYPE_PERCPU_ARRAY) {
    value_bytes = (value_bytes + 7) / 8 * 8 * static_cast<std::size_t>(possible_cpus());
  }
  std::size_t n = 0;
  if (Status walked = for_each_batch(bpf_map__fd(map), bpf_map__key_size(map), value_bytes,
                                     [&](const void*, const void*) { ++n; });
      !walked.ok()) {
    return walked.error();
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
