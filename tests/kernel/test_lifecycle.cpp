// The daemon as an operator runs it: --check, bad configs, SIGHUP reloads, and a shutdown
// that leaves nothing attached in the kernel.
#include <bpf/bpf.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "kernel/io_workload.h"
#include "libbpf/tracefs.h"
#include "support/bpf_held.h"

using namespace cephscope::test;

TEST_CASE("shutdown on SIGTERM leaves no program or link of ours in the kernel",
          "[kernel][lifecycle]") {
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  // Ours: what the daemon holds, not whatever else appeared meanwhile (the machine may be
  // shared with other BPF users, other cephscope daemons among them).
  const auto [ours, our_links] = held_by(daemon.pid());
  // the default set's 11 syscall enter/exit pairs, 4 block hooks, exec and exit: at least 30
  // programs and links.
  REQUIRE(ours.size() >= 30);
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
          "[kernel][lifecycle][userspace]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  const std::string good =
      std::string("listen: \"127.0.0.1:") + std::to_string(daemon.port()) + "\"\n";

  std::ofstream(daemon.config_path()) << good << "discovery:\n  scan_interval: soon\n";
  kill(daemon.pid(), SIGHUP);
  REQUIRE(daemon.log_has("reload rejected", std::chrono::seconds(20)));
  CHECK(daemon.log().find("discovery.scan_interval") != std::string::npos);
  CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);

  // A good config that also tracks the twin: it shows up after the reload.
  std::ofstream(daemon.config_path())
      << good << tracking_config() << "    - {comm: \"^io_other$\"}\n";
  kill(daemon.pid(), SIGHUP);
  REQUIRE(daemon.log_has("config reloaded", std::chrono::seconds(20)));
  run_io(daemon, dir, IoPattern{4, 4096, 1, 1}, {.twin_tracked = true});
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
  // syscall: fentry where the kernel allows it, else tracepoints
  const bool fentry = out.find("feature fentry: yes\n") != std::string::npos;
  CHECK(out.find(std::string("collector=syscall hook=") + (fentry ? "fentry" : "tracepoint") +
                 " status=ok") != std::string::npos);
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
    return {"/bin/sh", "-c", "echo $$ > " + path + R"(/cgroup.procs && exec "$0" "$@")"};
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
  if (kernel_charges_memlock()) {
    WARN("before 5.11 BPF maps are charged to RLIMIT_MEMLOCK, not to the memory cgroup");
    return;
  }
  if (std::getenv("ASAN_OPTIONS") != nullptr) {
    // .ci/sanitize: an ASan daemon's memory (shadow, quarantine, allocator reserve) moves by
    // more than the few MiB this limit is sized by; the plain tree and the guests run it.
    WARN("a limit sized from a sanitized daemon's peak means nothing: run in the plain tree");
    return;
  }
  const MemoryCgroup cgroup;
  INFO("needs a memory cgroup (v1, or v2 with the memory controller enabled)");
  REQUIRE(!cgroup.path.empty());
  // The daemon's own peak without the OSD collector, then a limit 4 MiB above it: too little
  // for the OSD collector's in-flight maps (about 15 MiB), enough for everything else. No
  // collector loads after it (the rados and kclient collectors do, by default): the failed
  // maps' memory is freed from a workqueue, and a load in that moment could meet the limit.
  const std::string after = "  rados: {enabled: false}\n  kclient: {enabled: false}\n";
  std::uint64_t base = 0;
  {
    const std::string dir = fresh_dir();
    Daemon daemon(dir, "collectors:\n  osd: {enabled: false}\n" + after, cgroup.wrapper());
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
  Daemon daemon(dir, "collectors:\n  osd: {enabled: true}\n" + after, cgroup.wrapper());
  const bool ready = daemon.wait_ready();
  INFO("memory limit " << base + (4ULL << 20) << " bytes; daemon log:\n" << daemon.log());
  REQUIRE(ready);
  CHECK(daemon.log().find("collector osd is unavailable") != std::string::npos);
  CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "osd"}}) == 0);
  CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);
  // The OSD collector's attach thread never started: stopping must not wait on it or abort.
  CHECK(daemon.stop() == std::optional<int>(0));
}
