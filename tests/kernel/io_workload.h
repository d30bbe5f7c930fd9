// Runs io_driver under a watching daemon: the tracked copy and an untracked twin do the
// same IO at the same time, so a test can tell attribution from mere presence.
#pragma once

#include <sys/types.h>

#include <functional>
#include <set>
#include <string>

#include "support/daemon_runner.h"

namespace cephscope::test {

struct IoPattern {
  long writes = 64;
  long size = 16384;
  long syncs = 5;
  long reads = 32;
};

// A fresh directory for one test: under $CEPHSCOPE_TEST_DIR, else under build/kernel-tests.
std::string fresh_dir();

// The config body that tracks io_driver (and nothing named io_other). `collectors`: more
// lines of the collectors section, e.g. "  vfs: {hook: kprobe}\n". Matchers come last.
std::string tracking_config(const std::string& collectors = "");

// Fails the test (REQUIRE) unless `dir` is on a file system backed by a block device; returns
// the disks behind it, as the block collector names them (block_disks.h).
std::set<std::string> require_block_device(const std::string& dir);

// Runs the pattern; returns the tracked driver's pid once both copies exited cleanly.
pid_t run_io(Daemon& daemon, const std::string& dir, const IoPattern& io);

// Linux before 5.11 charges BPF memory to RLIMIT_MEMLOCK, later ones to the memory cgroup.
bool kernel_charges_memlock();

// Polls /metrics until pred holds; false on timeout.
bool wait_for(Daemon& daemon, const std::function<bool(const Metrics&)>& pred,
              std::chrono::milliseconds timeout);

}  // namespace cephscope::test
