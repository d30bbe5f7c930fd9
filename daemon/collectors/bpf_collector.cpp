#include "collectors/bpf_collector.h"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "libbpf/maps.h"

namespace cephscope {

void ProbeStatusMerge::add(ProbeStatus st) {
  auto [it, fresh] = merged_.try_emplace({st.probe, st.target, st.fsid}, st);
  if (!fresh && it->second.attached && !st.attached) {
    it->second = std::move(st);
  }
}

void ProbeStatusMerge::append_to(std::vector<ProbeStatus>& out) {
  for (auto& [key, st] : merged_) {
    out.push_back(std::move(st));
  }
  merged_.clear();
}

profile::StoreOptions store_options(const Config::Profiles& c) {
  profile::StoreOptions o;
  o.cache_dir = c.cache_dir;
  o.shipped_dirs = c.shipped_dirs;
  o.limits.executable = c.resolver;
  o.limits.timeout = c.resolve_timeout;
  o.limits.address_space_bytes = static_cast<std::uint64_t>(c.resolver_memory_mib) << 20;
  return o;
}

std::int64_t realtime_offset_ns() {
  using std::chrono::nanoseconds;
  return std::chrono::duration_cast<nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch() -
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint32_t bench_cut(const char* collector, const char* variable, std::uint32_t max) {
  const char* cut = std::getenv(variable);
  if (cut == nullptr || *cut == '\0') {
    return 0;
  }
  const std::string value(cut);
  if (value.size() != 1 || value[0] < '1' || static_cast<std::uint32_t>(value[0] - '0') > max) {
    spdlog::error("{}: {}={} ignored: 1 to {} only", collector, variable, value, max);
    return 0;
  }
  spdlog::warn("{}: {}={}: a benchmark's cut programs, stages not measured", collector, variable,
               value);
  return static_cast<std::uint32_t>(value[0] - '0');
}

void BpfCollector::adopt(bpf_object* obj, std::function<void()> destroy, std::string hook) {
  owner_.destroy = std::move(destroy);
  obj_ = obj;
  hook_ = std::move(hook);
  refused_.clear();
}

void BpfCollector::drop_hook(std::size_t probes_before, std::size_t pruners_before) {
  forget_maps();
  links_.clear();
  if (owner_.destroy) {
    std::exchange(owner_.destroy, nullptr)();
  }
  obj_ = nullptr;
  hook_.clear();
  probes_.resize(std::min(probes_.size(), probes_before));
  pruners_.resize(std::min(pruners_.size(), pruners_before));
  refused_.clear();
}

void BpfCollector::attach(bpf_program* prog, const std::string& probe) {
  bpf_link* link = bpf_program__attach(prog);
  if (link == nullptr) {
    const int err = errno;
    const Cause why{reason_of_errno(err, Reason::kAttachFailed),
                    std::string("attach failed: ") + std::strerror(err)};
    spdlog::warn("{}: {} {}", name(), probe, why.detail);
    probes_.push_back({probe, "", false, why});
    if (refused_.empty()) {
      refused_ = probe + ": " + why.detail;
    }
    return;
  }
  links_.emplace_back(link);
  probes_.push_back({probe, "", true, {}});
}

void BpfCollector::unavailable(const Cause& why, const std::vector<std::string>& names) {
  why_ = why;
  for (const auto& n : names) {
    probes_.push_back({n, "", false, why});
  }
  spdlog::warn("collector {} is unavailable ({}): {}", name(), to_string(why.reason), why.detail);
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

Cause either_failed(const std::optional<Cause>& preferred, const Cause& fallback) {
  if (!preferred) {
    return fallback;
  }
  return {preferred->reason, preferred->detail + "; " + fallback.detail};
}

Cause BpfCollector::load_first_hook(const std::string& wanted,
                                    std::initializer_list<HookOption> options,
                                    const std::function<Status(const char* hook)>& load) {
  std::optional<Cause> failed;  // why the hooks tried so far did not load
  const char* last_tried = nullptr;
  const char* partial = nullptr;  // the first hook that loaded with a probe left unattached
  for (const HookOption* option = options.begin(); option != options.end(); ++option) {
    if (wanted != "auto" && wanted != option->hook) {
      continue;
    }
    if (last_tried != nullptr) {
      spdlog::info("{}: {} unusable ({}), trying {}", name(), last_tried, failed->detail,
                   option->hook);
    }
    const std::size_t probes_before = probes_.size();
    const std::size_t pruners_before = pruners_.size();
    Cause why;
    if (!option->feature.available) {
      why = {option->feature.why.reason,
             std::string(option->hook) + ": " + option->feature.why.detail};
    } else if (const Status loaded = load(option->hook); !loaded.ok()) {
      why = cause_of(loaded.error(), Reason::kLoadFailed);
    } else if (refused_.empty() || wanted != "auto" || option + 1 == options.end()) {
      return {};
    } else {
      // Loaded, but a probe did not attach: the next hook may take every one.
      why = {Reason::kAttachFailed, std::string(option->hook) + ": " + refused_};
      drop_hook(probes_before, pruners_before);
      partial = partial != nullptr ? partial : option->hook;
    }
    failed = either_failed(failed, why);
    last_tried = option->hook;
  }
  // No hook took every probe: the one that took some, once more.
  if (partial != nullptr) {
    spdlog::info("{}: no hook attaches every probe ({}), back to {}", name(), failed->detail,
                 partial);
    if (load(partial).ok()) {
      return {};
    }
  }
  return failed ? *failed : Cause{Reason::kInternal, "no hook named " + wanted};
}

Status reuse_tracked_maps(bpf_map* tgids, bpf_map* slots, TrackedMaps shared) {
  for (const auto& [map, fd] : {std::pair{tgids, shared.tgids}, std::pair{slots, shared.slots}}) {
    if (fd < 0) {
      continue;
    }
    if (const int err = bpf_map__reuse_fd(map, fd); err != 0) {
      return error_with(Reason::kInternal, ErrorKind::kSystem,
                        std::string("cannot share the tracked-process map ") + bpf_map__name(map) +
                            ": " + std::strerror(-err),
                        -err);
    }
  }
  return ok_status();
}

}  // namespace cephscope
