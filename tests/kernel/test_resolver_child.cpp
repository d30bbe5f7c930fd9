// The resolver child as the daemon runs it: a hanging resolver never stalls the daemon, is
// killed at its timeout with the reason on the OSD's stages, ends with a SIGTERM, and dies
// with the daemon after kill -9. A stand-in resolver (a script) hangs on purpose; the OSD is
// a waiting process named ceph-osd.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "support/daemon_runner.h"
#include "support/subprocess.h"

using namespace cephscope::test;
namespace fs = std::filesystem;

namespace {

// A resolver that, for this test's OSDs only, records its capabilities and then its pid, so
// that its capabilities are there once its pid is, then hangs. The OSDs of a Ceph cluster that
// other tests run beside this one fail at once: hanging, they would hold every resolver slot.
std::string hanging_resolver(const std::string& dir) {
  std::string path = dir + "/hanging-resolver";
  std::ofstream(path) << "#!/bin/sh\ncase \"$*\" in *'" << dir << "/osd-'*)\n"
                      << "  grep CapEff /proc/self/status > " << dir << "/resolver-caps.$$\n"
                      << "  echo $$ >> " << dir << "/resolver-pids\n"
                      << "  exec sleep 600\n;;\nesac\nexit 1\n";
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

// The pid of the resolver started after the first KNOWN ones, once it has started.
pid_t nth_resolver(const std::string& dir, std::size_t known) {
  for (int i = 0; i < 300; ++i) {
    std::ifstream in(dir + "/resolver-pids");
    std::vector<pid_t> pids;
    for (pid_t p = 0; in >> p;) {
      pids.push_back(p);
    }
    if (pids.size() > known) {
      return pids[known];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

// Gone, or a zombie waiting for whoever reaps orphans.
bool gone_soon(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string p, comm, state;
    if (!(stat >> p >> comm >> state) || state == "Z") {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::unique_ptr<Subprocess> start_osd(const std::string& dir, int id) {
  const std::string exe = dir + "/osd-" + std::to_string(id) + "/ceph-osd";
  fs::create_directories(fs::path(exe).parent_path());
  fs::copy_file(CEPHSCOPE_FAKE_OSD, exe, fs::copy_options::overwrite_existing);
  return std::make_unique<Subprocess>(std::vector<std::string>{exe, "-i", std::to_string(id)});
}

std::string config(const std::string& dir, const std::string& timeout) {
  return "collectors:\n  osd: {enabled: true}\nprofiles:\n  cache_dir: " + dir +
         "/cache\n  shipped_dirs: []\n  resolver: " + hanging_resolver(dir) +
         "\n  resolve_timeout: " + timeout + "\n";
}

}  // namespace

TEST_CASE("a hanging resolver neither stalls nor outlives the daemon",
          "[kernel][resolver][userspace]") {
  const std::string dir = test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
  {
    Daemon daemon(dir, config(dir, "3s"));
    DaemonLogOnFailure log_on_failure(daemon);
    REQUIRE(daemon.wait_ready());
    auto osd = start_osd(dir, 99);
    const pid_t first = nth_resolver(dir, 0);
    REQUIRE(first > 0);
    const std::string caps_file = dir + "/resolver-caps." + std::to_string(first);
    CHECK(std::ifstream(caps_file).good());
    std::string caps;
    std::getline(std::ifstream(caps_file), caps);
    CHECK(caps == "CapEff:\t0000000000000000");
    // The daemon answers while its resolver hangs.
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(daemon.scrape().sum("cephscope_collector_up", {{"collector", "osd"}}) == 1);
    std::printf(
        "scrape during a hanging resolve: %.1f ms\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    // At the timeout the resolver is killed and the OSD's stages say why.
    REQUIRE(gone_soon(first));
    bool reported = false;
    for (int i = 0; i < 50 && !reported; ++i) {
      for (const auto& s :
           daemon.scrape().find("cephscope_osd_stage_available", {{"ceph_daemon", "osd.99"}})) {
        reported = reported || (s.value == 0 && s.labels.at("reason") == "resolver_failed");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    INFO(daemon.scrape_text());
    CHECK(reported);
    CHECK(daemon.log().find("resolver timed out after 3 s") != std::string::npos);  // the detail

    // A second OSD's resolve is under way when SIGTERM comes: the daemon ends, so does it.
    auto osd2 = start_osd(dir, 98);
    const pid_t second = nth_resolver(dir, 1);
    REQUIRE(second > 0);
    CHECK(daemon.stop() == std::optional<int>(0));
    CHECK(gone_soon(second));
  }
  {
    Daemon daemon(dir, config(dir, "10m"));
    DaemonLogOnFailure log_on_failure(daemon);
    REQUIRE(daemon.wait_ready());
    auto osd = start_osd(dir, 97);
    const pid_t third = nth_resolver(dir, 2);
    REQUIRE(third > 0);
    REQUIRE(kill(daemon.pid(), SIGKILL) == 0);
    CHECK(gone_soon(third));
  }
}
