// The attach engine of the per-process (uprobe) collectors: osd, rados and usdt. The daemon
// loop hands it the registry's targets (sync); it queues an attach for each new process the
// collector wants and a detach for each one gone, and one worker thread runs them in order:
// resolving a new build's profile takes seconds and a uprobe detach ~100 ms, which must not
// hold up the loop. While idle it calls the collector's recheck every interval (libraries a
// process loaded since), and it runs work a collector posts for one attached process (the
// OSD's tier-2 windows). A collector says only what attaching and releasing one process is.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "collectors/bpf_collector.h"

namespace cephscope {

template <typename Process>
class ProcessAttacher {
 public:
  struct Hooks {
    // Attaches new process PID of TARGET into PROC: in the worker, outside the lock.
    std::function<void(pid_t, const TargetView&, Process&, const std::stop_token&)> attach;
    // Releases a process that went (or every process, at stop): in the worker, outside the
    // lock, since detaching its links is the slow part.
    std::function<void(pid_t, Process&)> release;
    // While nothing is queued, every `every` (none when zero).
    std::function<void(const std::stop_token&)> recheck;
    std::chrono::milliseconds every{0};
    // Once, first thing in the worker (optional).
    std::function<void(const std::stop_token&)> begin;
  };
  // A collector's own work on one attached process, run in the worker under the lock; the
  // links it returns are detached after the lock is let go.
  using Task = std::function<std::vector<Link>(pid_t, Process&)>;

  // MU is the collector's lock: it guards the processes (attached()) and the engine's queue.
  explicit ProcessAttacher(std::mutex& mu) : mu_(mu) {}
  ProcessAttacher(const ProcessAttacher&) = delete;
  ProcessAttacher& operator=(const ProcessAttacher&) = delete;
  ProcessAttacher(ProcessAttacher&&) = delete;
  ProcessAttacher& operator=(ProcessAttacher&&) = delete;
  ~ProcessAttacher() { stop(); }

  void start(Hooks hooks) {
    hooks_ = std::move(hooks);
    worker_ = std::jthread([this](const std::stop_token& stop) { work(stop); });
  }
  // Stops the worker, which releases every process still attached; before the collector's
  // BPF object goes.
  void stop() {
    if (worker_.joinable()) {
      worker_.request_stop();
      worker_.join();
    }
  }

  // Queues what the targets WANTED accepts need: attaches for new processes, detaches for
  // processes gone (once each), and an attach anew for a process the registry now files under
  // another target (an OSD whose fsid was found late). Takes the lock, and calls QUEUED under
  // it for each attach.
  template <typename Wanted, typename Queued>
  void sync(const std::vector<TargetView>& targets, const Wanted& wanted, const Queued& queued) {
    std::lock_guard lock(mu_);
    const std::size_t before = queue_.size();
    auto changes = process_changes(targets, wanted, attached_, queued_);
    for (const auto& t : targets) {
      for (const pid_t pid : t.pids) {
        auto it = target_of_.find(pid);
        if (it != target_of_.end() && it->second != t.id && wanted(t.identity)) {
          queued_.insert(pid);
          changes.attach.emplace_back(pid, t);  // the worker releases it first
        }
      }
    }
    for (auto& [pid, t] : changes.attach) {
      target_of_[pid] = t.id;
      queued(pid, t);
      queue_.push_back({pid, std::move(t), {}});
    }
    for (const pid_t pid : changes.gone) {
      target_of_.erase(pid);
      if (leaving_.insert(pid).second) {
        queue_.push_back({pid, std::nullopt, {}});
      }
    }
    if (queue_.size() != before) {
      wake_.notify_one();
    }
  }

  template <typename Wanted>
  void sync(const std::vector<TargetView>& targets, const Wanted& wanted) {
    sync(targets, wanted, [](pid_t /*pid*/, const TargetView& /*target*/) {});
  }

  // Under the lock: queues TASK for attached process PID.
  void post(pid_t pid, Task task) {
    queue_.push_back({pid, std::nullopt, std::move(task)});
    wake_.notify_one();
  }

  // Under the lock: the attached processes, and whether one's detach is queued.
  [[nodiscard]] std::map<pid_t, Process>& attached() { return attached_; }
  [[nodiscard]] const std::map<pid_t, Process>& attached() const { return attached_; }
  [[nodiscard]] bool leaving(pid_t pid) const { return leaving_.contains(pid); }
  [[nodiscard]] bool attaching(pid_t pid) const { return queued_.contains(pid); }

  // For a recheck, in the worker: takes the attached processes PICK selects out of attached()
  // while the recheck works on them (a sync sees them as attaches in progress), and
  // give_back() puts each back; a detach queued meanwhile comes after. Takes the lock.
  template <typename Pick>
  std::vector<std::pair<pid_t, Process>> borrow(const Pick& pick) {
    std::vector<std::pair<pid_t, Process>> out;
    std::lock_guard lock(mu_);
    for (auto it = attached_.begin(); it != attached_.end();) {
      if (!pick(it->second)) {
        ++it;
        continue;
      }
      queued_.insert(it->first);
      out.emplace_back(it->first, std::move(it->second));
      it = attached_.erase(it);
    }
    return out;
  }
  void give_back(pid_t pid, Process proc) {
    std::lock_guard lock(mu_);
    queued_.erase(pid);
    attached_.insert_or_assign(pid, std::move(proc));
  }

 private:
  struct Request {
    pid_t pid = 0;
    std::optional<TargetView> attach;  // an attach; empty with no task: a detach
    Task task;
  };

  void work(const std::stop_token& stop) {
    if (hooks_.begin) {
      hooks_.begin(stop);
    }
    while (!stop.stop_requested()) {
      Request req;
      {
        std::unique_lock lock(mu_);
        const auto ready = [&] { return !queue_.empty(); };
        const bool got = hooks_.every.count() > 0 ? wake_.wait_for(lock, stop, hooks_.every, ready)
                                                  : wake_.wait(lock, stop, ready);
        if (!got) {
          if (stop.stop_requested()) {
            break;
          }
          lock.unlock();
          if (hooks_.recheck) {
            hooks_.recheck(stop);
          }
          continue;
        }
        req = std::move(queue_.front());
        queue_.pop_front();
        if (!req.attach) {
          auto it = attached_.find(req.pid);
          if (req.task) {
            std::vector<Link> off;
            if (it != attached_.end()) {
              off = req.task(req.pid, it->second);
            }
            lock.unlock();
            continue;  // OFF detaches here, outside the lock
          }
          leaving_.erase(req.pid);
          if (it == attached_.end()) {
            continue;
          }
          Process gone = std::move(it->second);
          attached_.erase(it);
          lock.unlock();
          hooks_.release(req.pid, gone);
          continue;
        }
      }
      std::optional<Process> before;  // attached under another target: released first
      {
        std::lock_guard lock(mu_);
        if (auto it = attached_.find(req.pid); it != attached_.end()) {
          before = std::move(it->second);
          attached_.erase(it);
        }
      }
      if (before) {
        hooks_.release(req.pid, *before);
      }
      Process proc;
      hooks_.attach(req.pid, *req.attach, proc, stop);
      std::lock_guard lock(mu_);
      queued_.erase(req.pid);
      attached_.insert_or_assign(req.pid, std::move(proc));
    }
    std::map<pid_t, Process> left;
    {
      std::lock_guard lock(mu_);
      left.swap(attached_);
    }
    for (auto& [pid, proc] : left) {
      hooks_.release(pid, proc);
    }
  }

  std::mutex& mu_;
  Hooks hooks_;
  std::condition_variable_any wake_;
  std::deque<Request> queue_;                 // under mu_
  std::set<pid_t> queued_;                    // pids with an attach queued or in progress
  std::set<pid_t> leaving_;                   // pids with a detach queued
  std::map<pid_t, std::uint32_t> target_of_;  // the target each attach was queued for
  std::map<pid_t, Process> attached_;         // under mu_
  std::jthread worker_;                       // last: stops first
};

}  // namespace cephscope
