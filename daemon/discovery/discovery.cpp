#include "discovery/discovery.h"

#include <spdlog/spdlog.h>

#include <thread>
#include <unordered_set>

namespace cephscope {
namespace {

// When to look again at a fresh process that did not classify at exec.
constexpr std::array kRecheckDelays = {std::chrono::milliseconds(100),
                                       std::chrono::milliseconds(1000)};
constexpr std::size_t kMaxRecheck = 4096;

}  // namespace

bool Discovery::consider(pid_t pid, Clock::time_point now, bool* denied) {
  auto info = proc_.read(pid);
  if (!info.ok()) {
    waiting_.erase(pid);
    return false;  // gone, or unreadable: the next scan looks again
  }
  if (denied != nullptr) {
    *denied = info->exe_denied;
  }
  if (registry_.is_tracked(pid, info->start_time)) {
    return true;
  }
  if (registry_.is_contested(pid, info->start_time)) {
    return false;  // reported once, never tracked
  }
  if (auto it = lookups_.find(pid); it != lookups_.end()) {
    if (it->second->info.start_time == info->start_time) {
      return false;  // its lookup is under way
    }
    lookups_.erase(it);  // a reused pid: the old lookup's result is of no use
  }
  const Classifier classifier(proc_, config_);
  auto identity = classifier.classify(*info);
  if (!identity) {
    waiting_.erase(pid);  // no longer a target (it exec'd something else)
    return false;
  }
  identity->cgroup = parse_cgroup(proc_.cgroup(pid));
  const bool needs_fsid = identity->kind == TargetKind::kCephOsd && identity->fsid.empty();
  if (needs_fsid || identity->cgroup.in_container() || !identity->cgroup.pod_uid.empty()) {
    start_lookup(*info, std::move(*identity), now);
    return false;
  }
  if (auto st = registry_.track(*info, *identity, now); !st.ok()) {
    spdlog::warn("{}", st.error().message);
    return false;
  }
  return true;
}

void Discovery::scan(Clock::time_point now) {
  auto pids = proc_.list_pids();
  if (!pids.ok()) {
    // An empty list would forget every tracked process: keep them until a scan works.
    spdlog::error("discovery scan skipped: {}", pids.error().message);
    registry_.expire(now);
    return;
  }
  std::unordered_set<pid_t> alive;
  std::size_t denied_count = 0;
  for (pid_t pid : *pids) {
    alive.insert(pid);
    bool denied = false;
    consider(pid, now, &denied);
    denied_count += denied ? 1 : 0;
  }
  if (denied_count > 0 && !warned_denied_) {
    spdlog::warn(
        "cannot read the executable of {} processes (permission denied): without CAP_SYS_PTRACE "
        "the "
        "daemon cannot see other users' processes, Ceph daemons included",
        denied_count);
    warned_denied_ = true;
  }
  registry_.reconcile(alive, now);
  registry_.expire(now);
}

void Discovery::on_exec(pid_t pid, Clock::time_point now) {
  if (!consider(pid, now) && recheck_.size() < kMaxRecheck) {
    for (auto delay : kRecheckDelays) {
      recheck_.emplace_back(now + delay, pid);
    }
  }
}

void Discovery::start_lookup(const ProcessInfo& info, TargetIdentity identity,
                             Clock::time_point now) {
  if (running_->load() >= kMaxLookups) {
    // Wait for a lookup to return (recheck_due() tries again); once a target has waited as
    // long as a lookup may take, the lookups under way are stuck in their file systems: track
    // it without an fsid rather than pile up threads.
    auto [wait, fresh] = waiting_.try_emplace(info.pid, Waiting{info.start_time, now});
    if (!fresh && wait->second.start_time != info.start_time) {
      wait->second = Waiting{info.start_time, now};  // a reused pid waits afresh
    }
    if (now - wait->second.since < kLookupTimeout && waiting_.size() <= kMaxRecheck) {
      return;
    }
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - wait->second.since);
    waiting_.erase(wait);
    spdlog::warn(
        "pid {} ({}): fsid and container not looked up: {} earlier lookups have not "
        "returned in the {} ms it waited",
        info.pid, identity.ceph_daemon, running_->load(), waited.count());
    registry_.note_refusal("lookups_stalled");
    if (auto st = registry_.track(info, identity, now); !st.ok()) {
      spdlog::warn("{}", st.error().message);
    }
    return;
  }
  waiting_.erase(info.pid);
  auto lookup = std::make_shared<Lookup>();
  lookup->info = info;
  lookup->needs_fsid = identity.kind == TargetKind::kCephOsd && identity.fsid.empty();
  lookup->identity = std::move(identity);
  lookup->started = now;
  running_->fetch_add(1);
  try {
    std::thread([lookup, running = running_, proc = proc_, dirs = config_.containers,
                 find = find_fsid_] {
      const CgroupFacts& cgroup = lookup->identity.cgroup;
      if (lookup->needs_fsid) {
        lookup->result = find(proc, lookup->info.pid, parse_osd_args(lookup->info.argv), cgroup);
      }
      lookup->container = container_labels(cgroup, dirs);
      lookup->done.store(true, std::memory_order_release);
      running->fetch_sub(1);
    }).detach();
  } catch (const std::system_error& e) {
    running_->fetch_sub(1);
    spdlog::warn("pid {}: fsid not looked up: {}", info.pid, e.what());
    lookup->done.store(true, std::memory_order_release);
  }
  lookups_[info.pid] = std::move(lookup);
}

void Discovery::finish(Lookup& lookup, Clock::time_point now, bool timed_out) {
  const pid_t pid = lookup.info.pid;
  TargetIdentity identity = lookup.identity;
  if (timed_out) {
    spdlog::warn(
        "pid {} ({}): lookup refused: its files did not answer within {} ms (a stalled "
        "file system?); tracked without its fsid and container name until it returns",
        pid, lookup.identity.ceph_daemon, kLookupTimeout.count());
    registry_.note_refusal("timeout");
  } else {
    for (const Error& e : lookup.result.refusals) {
      spdlog::warn("pid {} ({}): file refused ({}): {}", pid, lookup.identity.ceph_daemon, e.reason,
                   e.message);
      registry_.note_refusal(e.reason);
    }
    if (lookup.needs_fsid) {
      identity.fsid = lookup.result.fsid;
    }
    identity.container = lookup.container;
  }
  if (auto st = registry_.track(lookup.info, identity, now); !st.ok()) {
    spdlog::warn("{}", st.error().message);
  }
}

void Discovery::finish_late(Lookup& lookup, Clock::time_point now) {
  const pid_t pid = lookup.info.pid;
  const bool news = (lookup.needs_fsid && !lookup.result.fsid.empty()) ||
                    !lookup.container.container.empty() || !lookup.container.pod.empty();
  if (!news || !registry_.is_tracked(pid, lookup.info.start_time)) {
    return;  // nothing found, or the process is gone (or its pid reused)
  }
  spdlog::warn("pid {} ({}): its lookup returned after {} ms (fsid {}): tracked again with it", pid,
               lookup.identity.ceph_daemon,
               std::chrono::duration_cast<std::chrono::milliseconds>(now - lookup.started).count(),
               lookup.result.fsid.empty() ? "unknown" : lookup.result.fsid);
  // The fsid-less target keeps its series for the TTL, as an exited OSD's.
  registry_.forget(pid, now, "leaves it for the target its lookup found");
  finish(lookup, now, false);
}

void Discovery::recheck_due(Clock::time_point now) {
  for (auto it = lookups_.begin(); it != lookups_.end();) {
    Lookup& l = *it->second;
    const bool done = l.done.load(std::memory_order_acquire);
    const bool late = !done && now - l.started >= kLookupTimeout;
    if (done || late) {
      finish(l, now, late);
      if (late) {
        late_[it->first] = it->second;
      }
      it = lookups_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = late_.begin(); it != late_.end();) {
    if (it->second->done.load(std::memory_order_acquire)) {
      finish_late(*it->second, now);
      it = late_.erase(it);
    } else {
      ++it;
    }
  }
  // Targets waiting for a lookup: started as lookups return, tracked without one when they
  // waited too long (start_lookup()). Only as many as there are free lookups, and those that
  // waited too long: each is a reading of its /proc entries on the daemon loop.
  std::vector<pid_t> waiting;
  int slots = kMaxLookups - running_->load();
  for (const auto& [pid, wait] : waiting_) {
    if (now - wait.since >= kLookupTimeout || slots-- > 0) {
      waiting.push_back(pid);
    }
  }
  for (pid_t pid : waiting) {
    consider(pid, now);
  }
  // Entries are queued in time order per exec; a full pass keeps it simple and bounded.
  std::deque<std::pair<Clock::time_point, pid_t>> later;
  for (const auto& [when, pid] : recheck_) {
    if (when <= now) {
      consider(pid, now);
    } else {
      later.emplace_back(when, pid);
    }
  }
  recheck_.swap(later);
}

}  // namespace cephscope
