// Finds targets: a full /proc scan at an interval, plus prompt checks of processes the
// kernel reports as just exec'd. A process that execs before it maps librados is checked
// again shortly after, since the dynamic loader maps libraries after exec.
//
// The daemon loop reads only /proc here. An OSD's fsid comes from files the OSD names
// (find_fsid()), which may sit on a file system that does not answer (NFS, a container's
// FUSE), and a containerised target's name from the runtime's records (container_labels()):
// they are read on a thread of their own per process, at most kMaxLookups at a time, and a
// target whose lookup takes longer than kLookupTimeout is tracked with no fsid and no
// container name; should the lookup return later, the target is tracked again with what it
// found (an OSD's series then move to the labels with its fsid). A target that finds every
// lookup under way waits for one to return (a host's OSDs are all found in one scan), and only
// one that waited kLookupTimeout is tracked without them.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>

#include "config/config.h"
#include "discovery/classify.h"
#include "discovery/proc.h"
#include "discovery/registry.h"

namespace cephscope {

class Discovery {
 public:
  static constexpr std::chrono::milliseconds kLookupTimeout{2000};
  static constexpr int kMaxLookups = 8;

  // What a lookup runs to find an OSD's fsid: find_fsid(), or a stand-in for a stalled file
  // system in tests.
  using FindFsid =
      std::function<FsidLookup(const ProcReader&, pid_t, const OsdArgs&, const CgroupFacts&)>;

  Discovery(ProcReader proc, TargetRegistry& registry, FindFsid find = find_fsid)
      : proc_(std::move(proc)), registry_(registry), find_fsid_(std::move(find)) {}

  void set_config(const Config::Discovery& config) { config_ = config; }
  // Full pass over /proc: track new targets, forget vanished ones, expire old series.
  void scan(Clock::time_point now);
  void on_exec(pid_t pid, Clock::time_point now);
  void on_exit(pid_t pid, Clock::time_point now) {
    lookups_.erase(pid);
    late_.erase(pid);
    waiting_.erase(pid);
    registry_.forget(pid, now);
  }
  // Re-checks recently exec'd processes whose time has come.
  // Also tracks OSDs whose fsid lookup has ended (or timed out), and starts waiting ones.
  void recheck_due(Clock::time_point now);

 private:
  // Whether the process is tracked now; *denied set when /proc hid its executable.
  bool consider(pid_t pid, Clock::time_point now, bool* denied = nullptr);

  struct Lookup {
    ProcessInfo info;
    TargetIdentity identity;
    Clock::time_point started;
    std::atomic<bool> done{false};
    bool needs_fsid = false;
    FsidLookup result;          // written by the lookup thread before `done`
    ContainerLabels container;  // likewise
  };
  // Targets waiting for a lookup to return, by pid: the process and when it began to wait.
  struct Waiting {
    std::uint64_t start_time;
    Clock::time_point since;
  };
  // Tracks a target with the lookup's outcome, reporting the files it refused.
  void finish(Lookup& lookup, Clock::time_point now, bool timed_out);
  void start_lookup(const ProcessInfo& info, TargetIdentity identity, Clock::time_point now);
  // A lookup that returned after its target was tracked without it: tracks it again with what
  // the lookup found, if the process still runs.
  void finish_late(Lookup& lookup, Clock::time_point now);

  ProcReader proc_;
  TargetRegistry& registry_;
  Config::Discovery config_;
  std::deque<std::pair<Clock::time_point, pid_t>> recheck_;
  bool warned_denied_ = false;
  FindFsid find_fsid_;
  std::unordered_map<pid_t, std::shared_ptr<Lookup>> lookups_;
  // Lookups that timed out, their targets tracked without them: at most kMaxLookups still run.
  std::unordered_map<pid_t, std::shared_ptr<Lookup>> late_;
  std::unordered_map<pid_t, Waiting> waiting_;
  std::shared_ptr<std::atomic<int>> running_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace cephscope
