// Capabilities: the documented set is enough (at kernel.perf_event_paranoid 2 and 3), a missing
// one is named in the log, and a daemon started as root keeps no more than the running set:
// CAP_SYS_ADMIN only where this kernel refuses perf events without it.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "kernel/io_workload.h"
#include "libbpf/tracefs.h"
#include "support/privileges.h"

using namespace cephscope::test;

namespace {

// The set docs/operations.md documents (CAP_SYS_ADMIN is added where perf_event_paranoid is 3).
const std::string kDocumentedSet = kDocumentedCaps;

// Debian's kernels add perf_event_paranoid=3 (their default), where perf_event_open, and so
// every tracepoint attach, needs CAP_SYS_ADMIN; at 2 and below CAP_PERFMON is enough.
std::string paranoid_caps() {
  return paranoid_level() >= 3 ? ",+sys_admin" : "";
}

std::string documented_memlock() {
  return kernel_charges_memlock() ? "unlimited" : "";
}

// The documented set has CAP_SYS_ADMIN only where perf_event_paranoid is 3: elsewhere the
// daemon cannot mount tracefs itself, and a fresh host may not have it mounted. Mounted here,
// as root, as an operator (or a root daemon) would have done.
void require_tracefs() {
  const auto dir = cephscope::ensure_tracefs(true);
  INFO((dir.ok() ? *dir : dir.error().message));
  REQUIRE(dir.ok());
}

// The daemon as user nobody holding exactly `caps` (setpriv: ambient, inheritable, bounding),
// with RLIMIT_MEMLOCK set to `memlock` (prlimit: bytes or "unlimited"; empty: inherited).
std::vector<std::string> as_nobody_with(std::string caps,
                                        const std::string& memlock = documented_memlock(),
                                        bool sys_admin_at_paranoid_3 = true) {
  require_tracefs();
  if (sys_admin_at_paranoid_3) {
    caps += paranoid_caps();
  }
  return as_nobody_argv(caps, memlock);
}

}  // namespace

TEST_CASE("the documented capabilities are enough, as an unprivileged user",
          "[kernel][lifecycle][caps]") {
  const int level = GENERATE(2, 3);
  const ParanoidLevel paranoid(level);
  INFO("kernel.perf_event_paranoid=" << level);
  const std::string dir = fresh_dir();
  require_block_device(dir);
  std::filesystem::permissions(
      dir, std::filesystem::perms::all);  // nobody reads the config, io_driver writes
  Daemon daemon(dir, tracking_config(), as_nobody_with(kDocumentedSet));
  const bool ready = daemon.wait_ready();
  INFO("daemon log at start:\n" << daemon.log());
  REQUIRE(ready);
  const IoPattern io{16, 4096, 2, 4};
  run_io(daemon, dir, io);  // io_driver runs as root: another user's process
  const Metrics m = daemon.scrape();
  INFO("daemon log:\n" << daemon.log());
  CHECK(m.sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);
  CHECK(m.sum("cephscope_collector_up", {{"collector", "block"}}) == 1);
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", "io_driver"}, {"syscall", "pwrite64"}}) == io.writes);
  CHECK(m.sum("cephscope_block_target_bytes_total", {{"process", "io_driver"}, {"op", "write"}}) >=
        io.writes * io.size);
  // By default a target's block IO is counted in bytes only; its latency is per device.
  CHECK(m.find("cephscope_block_target_device_seconds_count").empty());
  CHECK(m.sum("cephscope_block_device_seconds_count", {{"op", "write"}}) > 0);
}

TEST_CASE("a missing capability is named in the log", "[kernel][lifecycle][caps]") {
  const std::string dir = fresh_dir();
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  SECTION("without CAP_SYS_PTRACE other users' processes are invisible, and the log says why") {
    Daemon daemon(dir, tracking_config(),
                  as_nobody_with("+bpf,+perfmon,+dac_read_search,+checkpoint_restore"));
    const bool ready = daemon.wait_ready();
    INFO("daemon log:\n" << daemon.log());
    REQUIRE(ready);
    CHECK(daemon.log_has("without CAP_SYS_PTRACE", std::chrono::seconds(20)));
  }
  SECTION("without CAP_DAC_READ_SEARCH tracefs is unreadable, and the log says so") {
    Daemon daemon(dir, tracking_config(),
                  as_nobody_with("+bpf,+perfmon,+sys_ptrace,+checkpoint_restore"));
    const bool named = daemon.log_has("needs CAP_DAC_READ_SEARCH", std::chrono::seconds(10));
    INFO("daemon log:\n" << daemon.log());
    CHECK(named);
  }
  SECTION("a 64 KiB RLIMIT_MEMLOCK is named in the log before 5.11, and is enough after") {
    Daemon daemon(dir, tracking_config(), as_nobody_with(kDocumentedSet, "65536"));
    if (kernel_charges_memlock()) {
      const bool named = daemon.log_has("needs CAP_SYS_RESOURCE or LimitMEMLOCK=infinity",
                                        std::chrono::seconds(10));
      INFO("daemon log:\n" << daemon.log());
      CHECK(named);
    } else {
      const bool ready = daemon.wait_ready();
      INFO("daemon log:\n" << daemon.log());
      CHECK(ready);
      CHECK(daemon.log().find("RLIMIT_MEMLOCK") == std::string::npos);
    }
  }
}

namespace {

// Capability bits as /proc/PID/status shows them.
constexpr std::uint64_t cap(int n) {
  return std::uint64_t{1} << n;
}
constexpr std::uint64_t kRunningSet = cap(2) | cap(19) | cap(38) | cap(39) | cap(40);
constexpr std::uint64_t kSysAdmin = cap(21);

// One "CapXxx:" set of every thread of `pid`: the capabilities are per thread.
std::vector<std::uint64_t> thread_sets(pid_t pid, const std::string& set) {
  std::vector<std::uint64_t> out;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(task.path() / "status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(set + ":", 0) == 0) {
        out.push_back(std::stoull(line.substr(set.size() + 1), nullptr, 16));
      }
    }
  }
  return out;
}

std::uint64_t own_bounding_set() {
  const auto sets = thread_sets(getpid(), "CapBnd");
  REQUIRE(!sets.empty());
  return sets.front();
}

}  // namespace

TEST_CASE(
    "a daemon started as root keeps the running set only; CAP_SYS_ADMIN where perf "
    "events need it",
    "[kernel][lifecycle][caps]") {
  const int level = GENERATE(2, 3);
  const ParanoidLevel paranoid(level);
  require_tracefs();
  const std::string dir = fresh_dir();
  require_block_device(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);

  // Does this kernel refuse perf events without CAP_SYS_ADMIN at this level? Ask the daemon
  // itself, as nobody with the set less CAP_SYS_ADMIN: its syscall collector attaches through
  // perf_event_open, or is refused.
  bool refused = false;
  {
    Daemon without(dir, tracking_config(),
                   as_nobody_with(kDocumentedSet, documented_memlock(), false));
    REQUIRE(without.wait_ready());
    refused = without.scrape().sum("cephscope_collector_up", {{"collector", "syscall"}}) == 0;
    std::printf("perf_event_paranoid=%d: without CAP_SYS_ADMIN the syscall collector %s\n", level,
                refused ? "is refused" : "attaches");
    INFO("daemon log:\n" << without.log());
    if (level < 3) {
      CHECK_FALSE(refused);  // at 2, CAP_PERFMON is enough on every kernel
    }
  }

  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  // CAP_SYS_ADMIN stays where perf events are refused without it (seen above), and where the
  // uprobe PMU asks for it (the OSD collector's attach; the daemon's log says so).
  const bool uprobes_need_it =
      daemon.log_has("sys_admin: this kernel refuses perf events", std::chrono::seconds(1));
  std::printf("perf_event_paranoid=%d: the daemon %s CAP_SYS_ADMIN\n", level,
              uprobes_need_it ? "keeps" : "drops");
  if (refused) {
    CHECK(uprobes_need_it);
  }
  const std::uint64_t expected =
      (kRunningSet | (refused || uprobes_need_it ? kSysAdmin : 0)) & own_bounding_set();
  for (const char* set : {"CapEff", "CapPrm", "CapBnd"}) {
    for (const auto mask : thread_sets(daemon.pid(), set)) {
      INFO(set << " " << std::hex << mask << ", expected " << expected << "\n" << daemon.log());
      CHECK(mask == expected);
    }
  }
  for (const char* set : {"CapInh", "CapAmb"}) {
    for (const auto mask : thread_sets(daemon.pid(), set)) {
      INFO(set);
      CHECK(mask == 0);
    }
  }
  CHECK(daemon.log_has("capabilities kept: ", std::chrono::seconds(1)));
  // Every collector attached after the drop, with the kept set alone, and counts exactly.
  const IoPattern io{16, 4096, 2, 4};
  run_io(daemon, dir, io);
  const Metrics m = daemon.scrape();
  INFO("daemon log:\n" << daemon.log());
  CHECK(m.sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);
  CHECK(m.sum("cephscope_collector_up", {{"collector", "block"}}) == 1);
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", "io_driver"}, {"syscall", "pwrite64"}}) == io.writes);
  REQUIRE(daemon.stop() == 0);
}
