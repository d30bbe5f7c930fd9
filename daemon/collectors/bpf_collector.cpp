#include "collectors/bpf_collector.h"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "libbpf/maps.h"

namespace cephscope {

void BpfCollector::adopt(bpf_object* obj, std::function<void()> destroy, std::string hook) {
  owner_.destroy = std::move(destroy);
  obj_ = obj;
  hook_ = std::move(hook);
}

void BpfCollector::attach(bpf_program* prog, const std::string& probe) {
  bpf_link* link = bpf_program__attach(prog);
  if (link == nullptr) {
    const int err = errno;
    const std::string reason = std::string("attach failed: ") + std::strerror(err);
    spdlog::warn("{}: {} {}", name(), probe, reason);
    probes_.push_back({probe, "", false, reason});
    return;
  }
  links_.emplace_back(link);
  probes_.push_back({probe, "", true, "ok"});
}

void BpfCollector::unavailable(const std::string& reason, const std::vector<std::string>& names) {
  reason_ = reason;
  for (const auto& n : names) {
    probes_.push_back({n, "", false, reason});
  }
  spdlog::warn("collector {} is unavailable: {}", name(), reason);
}

void BpfCollector::prune_maps(const TargetIds& live) {
  for (const auto& prune_map : pruners_) {
    if (auto n = prune_map(live); !n.ok()) {
      spdlog::warn("{}: expired targets' map entries not deleted: {}", name(), n.error().message);
    } else if (*n > 0) {
      spdlog::debug("{}: {} map entries of expired targets deleted", name(), *n);
    }
  }
}

std::vector<MapUsage> BpfCollector::maps() const {
  std::vector<MapUsage> out;
  if (obj_ == nullptr) {
    return out;
  }
  bpf_map* map = nullptr;
  bpf_object__for_each_map(map, obj_) {
    const auto type = bpf_map__type(map);
    const std::string map_name = bpf_map__name(map);
    // Arrays are always full, ring buffers have no entries, rodata is not state, and the
    // shared filter map is reported once, by the daemon.
    if (type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_ARRAY ||
        type == BPF_MAP_TYPE_RINGBUF || map_name == "tracked_tgids") {
      continue;
    }
    if (auto entries = count_entries(map); entries.ok()) {
      out.push_back({map_name, *entries, bpf_map__max_entries(map)});
    } else {
      spdlog::warn("{}: map {} not counted: {}", name(), map_name, entries.error().message);
    }
  }
  return out;
}

std::vector<std::pair<std::string, ProgramStats>> BpfCollector::programs() const {
  std::vector<std::pair<std::string, ProgramStats>> out;
  if (obj_ == nullptr) {
    return out;
  }
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj_) {
    if (bpf_program__fd(prog) < 0) {
      continue;  // not loaded: the losing flavour, or a syscall this kernel lacks
    }
    if (auto stats = program_stats(prog); stats.ok()) {
      out.emplace_back(bpf_program__name(prog), *stats);
    } else {
      spdlog::warn("{}: {}", name(), stats.error().message);
    }
  }
  return out;
}

Result<LostCounts> BpfCollector::lost() const {
  LostCounts out{};
  if (obj_ == nullptr) {
    return out;
  }
  const bpf_map* map = bpf_object__find_map_by_name(obj_, "lost_events");
  if (map == nullptr) {
    return out;
  }
  for (std::uint32_t r = 0; r < LOST_REASONS; ++r) {
    auto n = sum_percpu_u64(bpf_map__fd(map), r);
    if (!n.ok()) {
      return n.error();
    }
    out[r] = *n;
  }
  return out;
}

Status reuse_tracked_map(bpf_map* map, int tracked_map_fd) {
  if (tracked_map_fd < 0) {
    return ok_status();
  }
  if (const int err = bpf_map__reuse_fd(map, tracked_map_fd); err != 0) {
    return make_error(ErrorKind::kSystem,
                      std::string("cannot share the tracked-process map: ") + std::strerror(-err),
                      -err);
  }
  return ok_status();
}

}  // namespace cephscope
