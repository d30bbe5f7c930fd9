#include "discovery/registry.h"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cephscope {

Labels target_labels(const TargetIdentity& identity) {
  if (!identity.ceph_daemon.empty()) {
    if (identity.fsid.empty()) {
      return {{"ceph_daemon", identity.ceph_daemon}};
    }
    return {{"ceph_daemon", identity.ceph_daemon}, {"fsid", identity.fsid}};
  }
  return {{"process", identity.process}};
}

std::uint64_t slot_word(const std::vector<std::pair<pid_t, std::uint32_t>>& in_slot) {
  if (in_slot.empty()) {
    return 0;
  }
  const auto [pid, target] = *std::min_element(in_slot.begin(), in_slot.end());
  std::uint64_t word =
      static_cast<std::uint32_t>(pid) | (static_cast<std::uint64_t>(target & 0x7fffffffU) << 32U);
  if (in_slot.size() > 1) {
    word |= TRACKED_SLOT_SHARED;
  }
  return word;
}

TargetRegistry::TargetRegistry(TrackedMaps maps, std::chrono::milliseconds ttl,
                               std::size_t max_targets)
    : maps_(maps), ttl_(ttl), max_targets_(max_targets) {}

Status TargetRegistry::sync_slot_locked(pid_t pid) const {
  if (maps_.slots < 0) {
    return ok_status();
  }
  std::uint32_t slot = tracked_slot(pid);
  std::vector<std::pair<pid_t, std::uint32_t>> in_slot;
  for (const auto& [tracked, process] : processes_) {
    if (tracked_slot(tracked) == slot) {
      in_slot.emplace_back(tracked, process.target_id);
    }
  }
  const std::uint64_t word = slot_word(in_slot);
  if (bpf_map_update_elem(maps_.slots, &slot, &word, BPF_ANY) != 0) {
    const int err = errno;
    return errno_error("cannot set the filter slot of pid " + std::to_string(pid), err);
  }
  return ok_status();
}

Status TargetRegistry::track(const ProcessInfo& info, const TargetIdentity& identity,
                             Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (auto it = processes_.find(info.pid); it != processes_.end()) {
    if (it->second.start_time == info.start_time) {
      return ok_status();
    }
    forget_locked(info.pid, now);  // the pid was reused by a new process
  }
  if (auto c = contested_.find(info.pid); c != contested_.end()) {
    if (c->second.start_time == info.start_time) {
      return ok_status();  // reported when it claimed; never tracked
    }
    contested_.erase(c);
  }
  auto it = targets_.find(identity.key());
  if (const Target* holder = live_holder(identity, info.ppid); holder != nullptr) {
    // A second live claimant of osd.N in the same cluster (or in one it does not name), not
    // a fork of the holder.
    contested_[info.pid] = Contender{info.start_time, identity.ceph_daemon};
    std::vector<pid_t> holders(holder->pids.begin(), holder->pids.end());
    std::sort(holders.begin(), holders.end());
    spdlog::warn(
        "identity conflict: pid {} ({}, fsid {}) claims {}, held by pid {} (fsid {}); pid {} "
        "is not tracked",
        info.pid, info.exe, identity.fsid.empty() ? "unknown" : identity.fsid, identity.ceph_daemon,
        holders.front(), holder->identity.fsid.empty() ? "unknown" : holder->identity.fsid,
        info.pid);
    return ok_status();
  }
  if (it == targets_.end()) {
    if (targets_.size() >= max_targets_) {
      return make_error(ErrorKind::kInvalidInput,
                        "target limit reached (" + std::to_string(max_targets_) +
                            "): not tracking pid " + std::to_string(info.pid));
    }
    it = targets_.emplace(identity.key(), Target{next_id_++, identity, {}, now}).first;
    spdlog::info("new target {} ({}) id {}",
                 identity.ceph_daemon.empty() ? identity.process : identity.ceph_daemon,
                 to_string(identity.kind), it->second.id);
  } else if (it->second.pids.empty()) {
    // Restarted, perhaps in a new container or pod: the series go on, the place is new.
    it->second.identity.cgroup = identity.cgroup;
    it->second.identity.container = identity.container;
  }
  ++generation_;
  Target& target = it->second;
  if (maps_.tgids >= 0) {
    const auto tgid = static_cast<std::uint32_t>(info.pid);
    if (bpf_map_update_elem(maps_.tgids, &tgid, &target.id, BPF_ANY) != 0) {
      const int err = errno;
      return make_error(ErrorKind::kSystem,
                        "cannot add pid " + std::to_string(info.pid) +
                            " to the filter map: " + std::strerror(err),
                        err);
    }
  }
  target.pids.insert(info.pid);
  target.last_alive = now;
  processes_[info.pid] = Process{target.id, info.start_time};
  // After the hash: a slot marked shared sends lookups there, where the pid already is.
  if (auto st = sync_slot_locked(info.pid); !st.ok()) {
    return st;
  }
  spdlog::info(
      "tracking pid {} as {}{}{}{}", info.pid,
      identity.ceph_daemon.empty() ? identity.process : identity.ceph_daemon,
      identity.fsid.empty() ? "" : " of " + identity.fsid,
      identity.container.container.empty() ? "" : " in container " + identity.container.container,
      identity.container.pod.empty()
          ? ""
          : " of pod " + identity.container.pod_namespace + "/" + identity.container.pod);
  return ok_status();
}

const TargetRegistry::Target* TargetRegistry::live_holder(const TargetIdentity& identity,
                                                          pid_t ppid) const {
  if (identity.kind != TargetKind::kCephOsd) {
    return nullptr;
  }
  for (const auto& [key, target] : targets_) {
    const TargetIdentity& held = target.identity;
    if (target.pids.empty() || target.pids.contains(ppid) || held.kind != TargetKind::kCephOsd ||
        held.ceph_daemon != identity.ceph_daemon) {
      continue;
    }
    // Another cluster's osd.N is a target of its own; a claimant that names no fsid cannot
    // tell which cluster it belongs to, so it contests every live holder of the name.
    if (identity.fsid.empty() || held.fsid == identity.fsid) {
      return &target;
    }
  }
  return nullptr;
}

void TargetRegistry::forget_locked(pid_t pid, Clock::time_point now, std::string_view why) {
  contested_.erase(pid);
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    return;
  }
  const std::uint32_t id = it->second.target_id;
  processes_.erase(it);
  if (maps_.tgids >= 0) {
    const auto tgid = static_cast<std::uint32_t>(pid);
    // ENOENT is expected: the BPF exit hook has deleted it already.
    if (bpf_map_delete_elem(maps_.tgids, &tgid) != 0 && errno != ENOENT) {
      spdlog::warn("cannot remove pid {} from the filter map: {}", pid, std::strerror(errno));
    }
  }
  if (auto st = sync_slot_locked(pid); !st.ok()) {
    spdlog::warn("{}", st.error().message);
  }
  ++generation_;
  for (auto& [key, target] : targets_) {
    if (target.id == id) {
      target.pids.erase(pid);
      target.last_alive = now;
      spdlog::info("pid {} of {} {}", pid,
                   target.identity.ceph_daemon.empty() ? target.identity.process
                                                       : target.identity.ceph_daemon,
                   why);
      break;
    }
  }
}

void TargetRegistry::forget(pid_t pid, Clock::time_point now, std::string_view why) {
  std::lock_guard lock(mu_);
  forget_locked(pid, now, why);
}

void TargetRegistry::reconcile(const std::unordered_set<pid_t>& alive, Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::vector<pid_t> gone;
  for (const auto& [pid, process] : processes_) {
    if (!alive.contains(pid)) {
      gone.push_back(pid);
    }
  }
  std::erase_if(contested_, [&](const auto& item) { return !alive.contains(item.first); });
  for (pid_t pid : gone) {
    forget_locked(pid, now);
  }
}

void TargetRegistry::expire(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (std::erase_if(targets_, [&](const auto& item) {
        const Target& t = item.second;
        const bool expired = t.pids.empty() && now - t.last_alive >= ttl_;
        if (expired) {
          spdlog::info("target id {} expired: its series are dropped", t.id);
        }
        return expired;
      }) > 0) {
    ++generation_;
  }
}

void TargetRegistry::set_ttl(std::chrono::milliseconds ttl) {
  std::lock_guard lock(mu_);
  ttl_ = ttl;
}

bool TargetRegistry::is_tracked(pid_t pid, std::uint64_t start_time) const {
  std::lock_guard lock(mu_);
  auto it = processes_.find(pid);
  return it != processes_.end() && it->second.start_time == start_time;
}

bool TargetRegistry::is_contested(pid_t pid, std::uint64_t start_time) const {
  std::lock_guard lock(mu_);
  auto it = contested_.find(pid);
  return it != contested_.end() && it->second.start_time == start_time;
}

std::map<std::string, std::size_t> TargetRegistry::conflicts() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::size_t> out;
  for (const auto& [pid, c] : contested_) {
    ++out[c.ceph_daemon];
  }
  return out;
}

void TargetRegistry::note_refusal(const std::string& reason) {
  std::lock_guard lock(mu_);
  ++refusals_[reason];
}

std::map<std::string, std::uint64_t> TargetRegistry::refusals() const {
  std::lock_guard lock(mu_);
  return refusals_;
}

std::vector<TargetView> TargetRegistry::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<TargetView> out;
  out.reserve(targets_.size());
  for (const auto& [key, t] : targets_) {
    TargetView v{t.id, t.identity, {t.pids.begin(), t.pids.end()}};
    std::sort(v.pids.begin(), v.pids.end());
    out.push_back(std::move(v));
  }
  return out;
}

std::uint64_t TargetRegistry::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

std::unordered_map<std::uint32_t, Labels> TargetRegistry::labels() const {
  std::lock_guard lock(mu_);
  std::unordered_map<std::uint32_t, Labels> out;
  for (const auto& [key, t] : targets_) {
    out.emplace(t.id, target_labels(t.identity));
  }
  return out;
}

std::size_t TargetRegistry::tracked_processes() const {
  std::lock_guard lock(mu_);
  return processes_.size();
}

}  // namespace cephscope
