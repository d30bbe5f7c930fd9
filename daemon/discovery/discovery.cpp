#include "discovery/discovery.h"

#include <spdlog/spdlog.h>

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
    return false;  // gone, or unreadable: the next scan looks again
  }
  if (denied != nullptr) {
    *denied = info->exe_denied;
  }
  if (registry_.is_tracked(pid, info->start_time)) {
    return true;
  }
  const Classifier classifier(proc_, config_);
  auto identity = classifier.classify(*info);
  if (!identity) {
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
  ++scans_;
}

void Discovery::on_exec(pid_t pid, Clock::time_point now) {
  if (!consider(pid, now) && recheck_.size() < kMaxRecheck) {
    for (auto delay : kRecheckDelays) {
      recheck_.emplace_back(now + delay, pid);
    }
  }
}

void Discovery::recheck_due(Clock::time_point now) {
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
