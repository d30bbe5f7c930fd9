// Runs io_driver under a watching daemon: the tracked copy and an untracked twin do the
// same IO at the same time, so a test can tell attribution from mere presence.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/daemon_runner.h"
#include "support/subprocess.h"

namespace cephscope::test {

struct IoPattern {
  long writes = 64;
  long size = 16384;
  long syncs = 5;
  long reads = 32;
};

// `text` as a YAML single-quoted regular expression that matches only `text`.
std::string yaml_regex_literal(const std::string& text);

// A fresh directory for one test: under $CEPHSCOPE_TEST_DIR, else under build/kernel-tests.
std::string fresh_dir();

// The config body that tracks io_driver (and nothing named io_other). `collectors`: more
// lines of the collectors section, e.g. "  vfs: {hook: kprobe}\n". Matchers come last.
std::string tracking_config(const std::string& collectors = "");

// Fails the test (REQUIRE) unless `dir` is on a file system backed by a block device; returns
// the disks behind it, as the block collector names them (block_disks.h).
std::set<std::string> require_block_device(const std::string& dir);

// The pids the tracked driver and its untracked twin are to have (0: what fork gives).
// `twin_tracked`: the config tracks io_other too, so the IO waits until the daemon shows it.
struct IoPids {
  pid_t tracked = 0;
  pid_t untracked = 0;
  bool twin_tracked = false;
};

// Runs the pattern; returns the tracked driver's pid once both copies exited cleanly.
pid_t run_io(Daemon& daemon, const std::string& dir, const IoPattern& io, IoPids pids = {});

// Starts argv as process `pid` (through /proc/sys/kernel/ns_last_pid, as root). Other forks
// on the host can take the pid first: it retries, and fails the test (REQUIRE) if it never
// gets it.
std::unique_ptr<Subprocess> spawn_as(pid_t pid, const std::vector<std::string>& argv,
                                     const std::string& log_path);

// `count` pids that are free now, below pid_max, and share the filter slot of `pid`
// (bpf/cephscope.h: CEPHSCOPE_TRACKED_SLOTS), in ascending order.
std::vector<pid_t> free_pids_in_slot_of(pid_t pid, std::size_t count);

// Two pids that are free now, below pid_max, `distance` apart (the lowest such pair).
std::pair<pid_t, pid_t> free_pids_apart(pid_t distance);

// Linux before 5.11 charges BPF memory to RLIMIT_MEMLOCK, later ones to the memory cgroup.
bool kernel_charges_memlock();

// kernel.bpf_stats_enabled on for the object's life (the BPF run time and runs per program
// that /metrics shows), restored after.
struct BpfStats {
  std::string was;
  BpfStats();
  ~BpfStats();
  BpfStats(const BpfStats&) = delete;
  BpfStats& operator=(const BpfStats&) = delete;
};

// Polls /metrics until the daemon shows `process` with `pid` as a target (10 s at most).
bool wait_target(Daemon& daemon, const std::string& process, pid_t pid);

// Polls /metrics until pred holds; false on timeout.
bool wait_for(Daemon& daemon, const std::function<bool(const Metrics&)>& pred,
              std::chrono::milliseconds timeout);

}  // namespace cephscope::test
