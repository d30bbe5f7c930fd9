// Finds targets: a full /proc scan at an interval, plus prompt checks of processes the
// kernel reports as just exec'd. A process that execs before it maps librados is checked
// again shortly after, since the dynamic loader maps libraries after exec.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <memory>

#include "config/config.h"
#include "discovery/classify.h"
#include "discovery/proc.h"
#include "discovery/registry.h"

namespace cephscope {

class Discovery {
 public:
  Discovery(ProcReader proc, TargetRegistry& registry)
      : proc_(std::move(proc)), registry_(registry) {}

  void set_config(const Config::Discovery& config) { config_ = config; }
  // Full pass over /proc: track new targets, forget vanished ones, expire old series.
  void scan(Clock::time_point now);
  void on_exec(pid_t pid, Clock::time_point now);
  void on_exit(pid_t pid, Clock::time_point now) { registry_.forget(pid, now); }
  // Re-checks recently exec'd processes whose time has come.
  void recheck_due(Clock::time_point now);
  [[nodiscard]] std::uint64_t scans() const { return scans_; }

 private:
  // Whether the process is tracked now; *denied set when /proc hid its executable.
  bool consider(pid_t pid, Clock::time_point now, bool* denied = nullptr);

  ProcReader proc_;
  TargetRegistry& registry_;
  Config::Discovery config_;
  std::deque<std::pair<Clock::time_point, pid_t>> recheck_;
  std::uint64_t scans_ = 0;
  bool warned_denied_ = false;
};

}  // namespace cephscope
