// Running the daemon with a chosen capability set, as the capability tests of the kernel and
// Ceph layers do: kernel.perf_event_paranoid set for one test, and setpriv's command line for
// a daemon that holds exactly a given set as user nobody.
#pragma once

#include <string>
#include <vector>

namespace cephscope::test {

// kernel.perf_event_paranoid set for one test, and put back after it.
class ParanoidLevel {
 public:
  explicit ParanoidLevel(int level);
  ~ParanoidLevel();
  ParanoidLevel(const ParanoidLevel&) = delete;
  ParanoidLevel& operator=(const ParanoidLevel&) = delete;

 private:
  int old_ = 2;
};

// The current kernel.perf_event_paranoid.
int paranoid_level();

// The set docs/operations.md documents for every kernel; CAP_SYS_ADMIN comes on top where the
// kernel refuses perf events or uprobes without it.
inline constexpr const char* kDocumentedCaps =
    "+bpf,+perfmon,+sys_ptrace,+dac_read_search,+checkpoint_restore";

// A wrapper (Daemon's `wrapper`) running the daemon as user nobody holding exactly `caps`
// (setpriv's syntax: "+bpf,+perfmon"; ambient, inheritable and bounding sets), with
// RLIMIT_MEMLOCK set to `memlock` (prlimit: bytes or "unlimited"; empty: inherited).
std::vector<std::string> as_nobody_argv(const std::string& caps, const std::string& memlock);

}  // namespace cephscope::test
