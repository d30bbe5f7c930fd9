#include "kernel/io_workload.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>

#include "bpf/cephscope.h"
#include "kernel/block_disks.h"

namespace cephscope::test {

std::string yaml_regex_literal(const std::string& text) {
  std::string out = "'^";
  for (const char c : text) {
    if (std::string_view(R"(\^$.|?*+()[]{})").find(c) != std::string_view::npos) {
      out += '\\';
    }
    out += c == '\'' ? "''" : std::string(1, c);
  }
  return out + "$'";
}

std::string fresh_dir() {
  return test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
}

std::string tracking_config(const std::string& collectors) {
  // The OSD collector has its own e2e test; here it would only slow the start (its verifier
  // pass is long on older kernels under emulation). Matchers come last, so a caller can
  // append more. The executable's path keeps an io_driver of another build tree (another
  // test run on the same machine) out of the exact counts.
  return "collectors:\n"
         "  osd: {enabled: false}\n" +
         collectors +
         "discovery:\n"
         "  scan_interval: 1s\n"
         "  series_ttl: 3s\n"
         "  matchers:\n"
         "    - {comm: \"^io_driver$\", exe: " +
         yaml_regex_literal(CEPHSCOPE_IO_DRIVER) + "}\n";
}

std::set<std::string> require_block_device(const std::string& dir) {
  auto disks = disks_behind(dir);
  INFO(dir << " must be on a file system on a block device (set CEPHSCOPE_TEST_DIR)");
  REQUIRE_FALSE(disks.empty());
  return disks;
}

bool wait_for(Daemon& daemon, const std::function<bool(const Metrics&)>& pred,
              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(daemon.scrape())) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

namespace {

// Creates the driver's file at its full size and syncs it, from this (untracked) process.
void allocate(const std::string& path, long bytes) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(posix_fallocate(fd, 0, bytes) == 0);
  REQUIRE(fsync(fd) == 0);
  close(fd);
}

}  // namespace

std::unique_ptr<Subprocess> spawn_as(pid_t pid, const std::vector<std::string>& argv,
                                     const std::string& log_path) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::ofstream("/proc/sys/kernel/ns_last_pid") << pid - 1 << std::flush;
    auto child = std::make_unique<Subprocess>(argv, log_path);
    if (child->pid() == pid) {
      return child;
    }
    child->signal(SIGKILL);
    child->wait(std::chrono::seconds(5));
    // Another process forked first and took the pid (a build beside the tests forks
    // compilers): wait until it has gone before the next try.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::filesystem::exists("/proc/" + std::to_string(pid)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  FAIL("could not start " << argv.at(0) << " as pid " << pid);
  return nullptr;
}

std::vector<pid_t> free_pids_in_slot_of(pid_t pid, std::size_t count) {
  long pid_max = 0;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  std::vector<pid_t> out;
  // /proc/N exists for every live process and thread with that id.
  for (long p = pid % CEPHSCOPE_TRACKED_SLOTS; p < pid_max && out.size() < count;
       p += CEPHSCOPE_TRACKED_SLOTS) {
    if (p > 300 && p != pid && !std::filesystem::exists("/proc/" + std::to_string(p))) {
      out.push_back(static_cast<pid_t>(p));
    }
  }
  REQUIRE(out.size() == count);
  return out;
}

std::pair<pid_t, pid_t> free_pids_apart(pid_t distance) {
  long pid_max = 0;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  const auto is_free = [](long p) {
    return !std::filesystem::exists("/proc/" + std::to_string(p));
  };
  for (long p = 301; p + distance < pid_max; ++p) {
    if (is_free(p) && is_free(p + distance)) {
      return {static_cast<pid_t>(p), static_cast<pid_t>(p + distance)};
    }
  }
  FAIL("no two free pids " << distance << " apart below pid_max " << pid_max);
  return {};
}

pid_t run_io(Daemon& daemon, const std::string& dir, const IoPattern& io, IoPids pids) {
  const std::string other = dir + "/io_other";
  std::filesystem::remove(other);
  std::filesystem::create_symlink(CEPHSCOPE_IO_DRIVER, other);  // same program, comm "io_other"
  const std::string go = dir + "/go";
  std::filesystem::remove(go);
  for (const auto* name : {"/tracked.dat", "/other.dat"}) {
    allocate(dir + name, io.writes * io.size);
  }
  auto args = [&](const std::string& exe, const std::string& file) {
    return std::vector<std::string>{exe,
                                    file,
                                    go,
                                    std::to_string(io.writes),
                                    std::to_string(io.size),
                                    std::to_string(io.syncs),
                                    std::to_string(io.reads)};
  };
  auto start = [&](pid_t want, const std::vector<std::string>& argv, const std::string& log) {
    return want != 0 ? spawn_as(want, argv, log) : std::make_unique<Subprocess>(argv, log);
  };
  const auto tracked_child =
      start(pids.tracked, args(CEPHSCOPE_IO_DRIVER, dir + "/tracked.dat"), dir + "/io_driver.log");
  const auto untracked_child =
      start(pids.untracked, args(other, dir + "/other.dat"), dir + "/io_other.log");
  Subprocess& tracked = *tracked_child;
  Subprocess& untracked = *untracked_child;
  const std::string pid = std::to_string(tracked.pid());
  const std::string twin_pid = std::to_string(untracked.pid());
  const bool seen = wait_for(
      daemon,
      [&](const Metrics& m) {
        return !m.find("cephscope_target_info", {{"process", "io_driver"}, {"pid", pid}}).empty() &&
               (!pids.twin_tracked ||
                !m.find("cephscope_target_info", {{"process", "io_other"}, {"pid", twin_pid}})
                     .empty());
      },
      std::chrono::seconds(10));
  INFO("daemon log:\n" << daemon.log());
  REQUIRE(seen);
  std::ofstream(go).put('\n');
  REQUIRE(tracked.wait(std::chrono::seconds(60)) == 0);
  REQUIRE(untracked.wait(std::chrono::seconds(60)) == 0);
  std::filesystem::remove(dir + "/tracked.dat");
  std::filesystem::remove(dir + "/other.dat");
  return tracked.pid();
}

bool wait_target(Daemon& daemon, const std::string& process, pid_t pid) {
  const std::string id = std::to_string(pid);
  return wait_for(
      daemon,
      [&](const Metrics& m) {
        return !m.find("cephscope_target_info", {{"process", process}, {"pid", id}}).empty();
      },
      std::chrono::seconds(10));
}

BpfStats::BpfStats() {
  std::ifstream("/proc/sys/kernel/bpf_stats_enabled") >> was;
  std::ofstream("/proc/sys/kernel/bpf_stats_enabled") << "1";
}

BpfStats::~BpfStats() {
  if (!was.empty()) {
    std::ofstream("/proc/sys/kernel/bpf_stats_enabled") << was;
  }
}

bool kernel_charges_memlock() {
  utsname u{};
  int major = 0;
  int minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) {
    return false;
  }
  return major < 5 || (major == 5 && minor < 11);
}

}  // namespace cephscope::test
