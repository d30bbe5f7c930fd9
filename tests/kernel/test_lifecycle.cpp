// The daemon as an operator runs it: --check, bad configs, SIGHUP reloads, and a shutdown
// that leaves nothing attached in the kernel.
#include <bpf/bpf.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "kernel/io_workload.h"
#include "libbpf/tracefs.h"

using namespace cephscope::test;

namespace {

std::set<__u32> link_ids() {
  std::set<__u32> ids;
  __u32 id = 0;
  while (bpf_link_get_next_id(id, &id) == 0) {
    ids.insert(id);
  }
  return ids;
}

// The programs and links a process holds open: the "prog_id:" and "link_id:" lines of its
// fdinfo (a link's names its program too). Whatever else runs BPF on the machine is not in it.
struct HeldIds {
  std::set<__u32> progs;
  std::set<__u32> links;
};

HeldIds held_by(pid_t pid) {
  HeldIds out;
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo", ec)) {
    std::ifstream in(fd.path());
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string key;
      __u32 id = 0;
      if (!(fields >> key >> id)) {
        continue;
      }
      if (key == "prog_id:") {
        out.progs.insert(id);
      } else if (key == "link_id:") {
        out.links.insert(id);
      }
    }
  }
  return out;
}

bool prog_exists(__u32 id) {
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return errno != ENOENT;
}

bool log_has(const Daemon& d, const std::string& text, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (d.log().find(text) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

TEST_CASE("shutdown on SIGTERM leaves no program or link of ours in the kernel",
          "[kernel][lifecycle]") {
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  // Ours: what the daemon holds, not whatever else appeared meanwhile (the machine may be
  // shared with other BPF users, other cephscope daemons among them).
  const auto [ours, our_links] = held_by(daemon.pid());
  // syscall enter/exit pairs, 4 block hooks, exec and exit: at least 50 programs and links.
  REQUIRE(ours.size() >= 50);
  REQUIRE(our_links.size() >= 6);
  REQUIRE(daemon.stop() == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (auto id : ours) {
    INFO("program id " << id);
    CHECK_FALSE(prog_exists(id));
  }
  for (auto id : link_ids()) {
    CHECK_FALSE(our_links.contains(id));
  }
  std::string out;
  REQUIRE(run_command("bpftool -j prog show", &out) == 0);
  for (const auto& p : nlohmann::json::parse(out)) {
    CHECK_FALSE(ours.contains(p.at("id").get<__u32>()));
  }
  REQUIRE(run_command("bpftool -j link show", &out) == 0);
  for (const auto& l : nlohmann::json::parse(out)) {
    CHECK_FALSE(our_links.contains(l.at("id").get<__u32>()));
  }
}

TEST_CASE("SIGHUP reloads the config; a bad one is rejected and the old one stays",
          "[kernel][lifecycle]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  const std::string good =
      std::string("listen: \"127.0.0.1:") + std::to_string(daemon.port()) + "\"\n";

  std::ofstream(daemon.config_path()) << good << "discovery:\n  scan_interval: soon\n";
  kill(daemon.pid(), SIGHUP);
  REQUIRE(log_has(daemon, "reload rejected", std::chrono::seconds(5)));
  CHECK(daemon.log().find("discovery.scan_interval") != std::string::npos);
  CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);

  // A good config that also tracks the twin: it shows up after the reload.
  std::ofstream(daemon.config_path())
      << good << tracking_config() << "    - {comm: \"^io_other$\"}\n";
  kill(daemon.pid(), SIGHUP);
  REQUIRE(log_has(daemon, "config reloaded", std::chrono::seconds(5)));
  run_io(daemon, dir, IoPattern{4, 4096, 1, 1});
  const Metrics m = daemon.scrape();
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", "io_other"}, {"syscall", "pwrite64"}}) == 4);
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", "io_driver"}, {"syscall", "pwrite64"}}) == 4);
}

TEST_CASE("--check prints what will and will not work on this kernel", "[kernel][lifecycle]") {
  const std::string dir = fresh_dir();
  const std::string config = dir + "/check.yaml";
  std::ofstream(config) << tracking_config();
  std::string out;
  REQUIRE(run_command(daemon_binary() + " --check --config " + config + " 2>/dev/null", &out) == 0);
  INFO(out);
  CHECK(out.find("collector=syscall hook=tracepoint status=ok") != std::string::npos);
  CHECK((out.find("collector=block hook=tp_btf status=ok") != std::string::npos ||
         out.find("collector=block hook=tracepoint status=ok") != std::string::npos));
  CHECK(out.find("collector=vfs hook=") != std::string::npos);
  CHECK(out.find("feature fentry: ") != std::string::npos);
  // The OSD probes, from the collector's probe table (the collector is off in this config).
  CHECK(out.find("osd probe=\"PrimaryLogPG::log_op_stats\" program=osd_op_done off\n") !=
        std::string::npos);
  CHECK(out.find("osd probe=\"BlueStore::_txc_finish_io\" program=osd_txc_finish_io off "
                 "instead_of=osd_txc_io_done\n") != std::string::npos);
}

namespace {

// Debian's kernels add perf_event_paranoid=3 (their default), where perf_event_open, and so
// every tracepoint attach, needs CAP_SYS_ADMIN; at 2 and below CAP_PERFMON is enough.
std::string paranoid_caps() {
  int level = 2;
  std::ifstream("/proc/sys/kernel/perf_event_paranoid") >> level;
  return level >= 3 ? ",+sys_admin" : "";
}

// Linux before 5.11 charges BPF memory to RLIMIT_MEMLOCK: there the documented set comes
// with LimitMEMLOCK=infinity (deploy/systemd/cephscope.service). 5.11 and later need none.
bool memlock_charged() {
  utsname u{};
  int major = 0;
  int minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) {
    return false;
  }
  return major < 5 || (major == 5 && minor < 11);
}

std::string documented_memlock() {
  return memlock_charged() ? "unlimited" : "";
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
                                        const std::string& memlock = documented_memlock()) {
  require_tracefs();
  caps += paranoid_caps();
  std::vector<std::string> argv;
  if (!memlock.empty()) {
    argv = {"/usr/bin/prlimit", "--memlock=" + memlock + ":" + memlock, "--"};
  }
  for (std::string arg : {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}) {
    argv.push_back(arg);
  }
  for (const char* set : {"--inh-caps=-all,", "--ambient-caps=-all,", "--bounding-set=-all,"}) {
    argv.push_back(set + caps);
  }
  return argv;
}

}  // namespace

TEST_CASE("the documented capabilities are enough, as an unprivileged user",
          "[kernel][lifecycle][caps]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  std::filesystem::permissions(
      dir, std::filesystem::perms::all);  // nobody reads the config, io_driver writes
  Daemon daemon(dir, tracking_config(),
                as_nobody_with("+bpf,+perfmon,+sys_ptrace,+dac_read_search"));
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
}

TEST_CASE("a missing capability is named in the log", "[kernel][lifecycle][caps]") {
  const std::string dir = fresh_dir();
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  SECTION("without CAP_SYS_PTRACE other users' processes are invisible, and the log says why") {
    Daemon daemon(dir, tracking_config(), as_nobody_with("+bpf,+perfmon,+dac_read_search"));
    const bool ready = daemon.wait_ready();
    INFO("daemon log:\n" << daemon.log());
    REQUIRE(ready);
    CHECK(log_has(daemon, "without CAP_SYS_PTRACE", std::chrono::seconds(5)));
  }
  SECTION("without CAP_DAC_READ_SEARCH tracefs is unreadable, and the log says so") {
    Daemon daemon(dir, tracking_config(), as_nobody_with("+bpf,+perfmon,+sys_ptrace"));
    const bool named = log_has(daemon, "needs CAP_DAC_READ_SEARCH", std::chrono::seconds(10));
    INFO("daemon log:\n" << daemon.log());
    CHECK(named);
  }
  SECTION("a 64 KiB RLIMIT_MEMLOCK is named in the log before 5.11, and is enough after") {
    Daemon daemon(dir, tracking_config(),
                  as_nobody_with("+bpf,+perfmon,+sys_ptrace,+dac_read_search", "65536"));
    if (memlock_charged()) {
      const bool named = log_has(daemon, "needs CAP_SYS_RESOURCE or LimitMEMLOCK=infinity",
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

// A fresh memory cgroup (v1 hierarchy or v2 with the memory controller); "" when there is none.
struct MemoryCgroup {
  std::string path;
  bool v1 = false;

  MemoryCgroup() {
    const std::string name = "cephscope-test-" + std::to_string(getpid());
    if (std::filesystem::exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
      v1 = true;
      path = "/sys/fs/cgroup/memory/" + name;
    } else if (std::ifstream c("/sys/fs/cgroup/cgroup.controllers"); c) {
      std::string controllers((std::istreambuf_iterator<char>(c)), {});
      if (controllers.find("memory") == std::string::npos) {
        return;
      }
      std::ofstream("/sys/fs/cgroup/cgroup.subtree_control") << "+memory";  // e.g. a bare guest
      path = "/sys/fs/cgroup/" + name;
    }
    if (!path.empty() && !std::filesystem::create_directory(path)) {
      path.clear();
    }
  }
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;
  ~MemoryCgroup() {
    if (!path.empty()) {
      rmdir(path.c_str());
    }
  }
  [[nodiscard]] std::string file(const std::string& v1_name, const std::string& v2_name) const {
    return path + "/" + (v1 ? v1_name : v2_name);
  }
  // Runs the daemon inside this cgroup.
  [[nodiscard]] std::vector<std::string> wrapper() const {
    return {"/bin/sh", "-c", "echo $$ > " + path + "/cgroup.procs && exec \"$0\" \"$@\""};
  }
  // The most memory charged so far; 0 when the kernel does not say (cgroup v2 before 5.19).
  [[nodiscard]] std::uint64_t peak() const {
    std::uint64_t bytes = 0;
    std::ifstream(file("memory.max_usage_in_bytes", "memory.peak")) >> bytes;
    return bytes;
  }
  void limit(std::uint64_t bytes) const {
    std::ofstream(file("memory.limit_in_bytes", "memory.max")) << bytes;
  }
};

}  // namespace

TEST_CASE("an OSD collector that cannot load is unavailable, and SIGTERM still ends the daemon",
          "[kernel][lifecycle][cgroup]") {
  if (memlock_charged()) {
    WARN("before 5.11 BPF maps are charged to RLIMIT_MEMLOCK, not to the memory cgroup");
    return;
  }
  const MemoryCgroup cgroup;
  INFO("needs a memory cgroup (v1, or v2 with the memory controller enabled)");
  REQUIRE(!cgroup.path.empty());
  // The daemon's own peak without the OSD collector, then a limit 4 MiB above it: too little
  // for the OSD collector's in-flight maps (about 15 MiB), enough for everything else.
  std::uint64_t base = 0;
  {
    const std::string dir = fresh_dir();
    Daemon daemon(dir, "collectors:\n  osd: {enabled: false}\n", cgroup.wrapper());
    REQUIRE(daemon.wait_ready());
    base = cgroup.peak();
    REQUIRE(daemon.stop() == std::optional<int>(0));
  }
  if (base == 0) {
    WARN("the memory cgroup keeps no peak (cgroup v2 before 5.19): no limit to size");
    return;
  }
  cgroup.limit(base + (4ULL << 20));
  const std::string dir = fresh_dir();
  Daemon daemon(dir, "collectors:\n  osd: {enabled: true}\n", cgroup.wrapper());
  const bool ready = daemon.wait_ready();
  INFO("memory limit " << base + (4ULL << 20) << " bytes; daemon log:\n" << daemon.log());
  REQUIRE(ready);
  CHECK(daemon.log().find("collector osd is unavailable") != std::string::npos);
  CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "osd"}}) == 0);
  CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);
  // The OSD collector's attach thread never started: stopping must not wait on it or abort.
  CHECK(daemon.stop() == std::optional<int>(0));
}
