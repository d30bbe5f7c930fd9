// e2e (root, live test cluster): where the OSD collector's probe profiles come from. An OSD
// of a shipped build gets every stage with no debug file and no resolver; in a container, a
// profile made from the container's own debug files steers a probe only where the binary
// agrees, and never shadows a shipped one; a restarted container OSD has its probes live
// again within 2 s. The container cases run in the container layer (tests/e2e/CMakeLists.txt).
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "ceph_harness.h"
#include "osd_control.h"
#include "osd_stages_common.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"

using namespace cephscope::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST_CASE("an OSD of a shipped build gets every stage with no debug file and no resolver",
          "[e2e][ceph][osd][profiles]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string dir = test_dir(cluster.dir);
  // An empty cache, the repository's shipped profiles, and a resolver that cannot run: the
  // node as if it had no -dbg package (the host's are never read without the resolver).
  Daemon daemon(dir, daemon_config() + "profiles:\n  cache_dir: " + dir +
                         "/cache\n  shipped_dirs: [" + CEPHSCOPE_SOURCE_DIR +
                         "/config/profiles]\n  resolver: /nonexistent/cephscope-resolver\n");
  check_shipped_profile_used(cluster, daemon);
  CHECK_FALSE(daemon.log_has("resolver failed", 1s));
}

namespace {

std::string build_id_of(const std::string& elf) {
  const auto r =
      run_command({"sh", "-c", "readelf -n '" + elf + "' | sed -n 's/.*Build ID: //p'"}, 30s);
  REQUIRE(r.ok());
  std::string id = r.out.substr(0, r.out.find('\n'));
  REQUIRE(id.size() == 40);
  return id;
}

}  // namespace

TEST_CASE("a profile from a container's debug files steers a probe only where the binary agrees",
          "[e2e][ceph][osd][verify][container]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE_FALSE(cluster.osds.front().container.empty());  // a container cluster's test
  const std::string dir = test_dir(cluster.dir);
  const std::string cache = dir + "/cache";
  auto config = [&](const std::string& shipped, const std::string& resolver) {
    return daemon_config() + "profiles:\n  cache_dir: " + cache + "\n  shipped_dirs: [" + shipped +
           "]\n" + (resolver.empty() ? "" : "  resolver: " + resolver + "\n");
  };

  // 1. No shipped profile, an empty cache: resolved from the -dbg package inside the
  // container, checked against each OSD's binary, cached apart.
  std::string container_profile;
  {
    Daemon daemon(dir, config("", ""));
    DaemonLogOnFailure print_log{daemon};
    REQUIRE(daemon.wait_ready(60s));
    REQUIRE(wait_for_probes(cluster, daemon));
    check_stages_available(cluster, daemon.scrape());
    CHECK(daemon.log_has("profile made from the container's files: its offsets are checked", 5s));
    for (const auto& e : fs::directory_iterator(cache + "/containers")) {
      if (e.path().string().ends_with(".osd-stages.json")) {
        container_profile = e.path().string();
      }
    }
    REQUIRE_FALSE(container_profile.empty());
    // Nothing of this cluster's build in the host's cache (another cluster's OSDs on this host,
    // the host's own Ceph, are the daemon's targets too, and theirs may be there).
    const std::string own =
        build_id_of("/proc/" + std::to_string(cluster.osds.front().pid) + "/exe");
    for (const auto& e : fs::directory_iterator(cache)) {
      INFO(e.path());
      CHECK_FALSE(e.path().filename().string().starts_with(own));
    }
    REQUIRE(daemon.stop() == std::optional<int>(0));
  }

  // 2. The cached container profile says _txc_committed_kv starts one byte later: that probe
  // is refused, every other probe and stage still works.
  auto doc = nlohmann::json::parse(slurp(container_profile));
  bool moved = false;
  for (auto& f : doc["functions"]) {
    if (f["name"] == "BlueStore::_txc_committed_kv") {
      for (auto& i : f["instances"]) {
        i["vaddr"] = i["vaddr"].get<std::uint64_t>() + 1;
        i["file_offset"] = i["file_offset"].get<std::uint64_t>() + 1;
        moved = true;
      }
    }
  }
  REQUIRE(moved);
  std::ofstream(container_profile) << doc.dump();
  {
    Daemon daemon(dir, config("", "/nonexistent/cephscope-resolver"));
    DaemonLogOnFailure print_log{daemon};
    REQUIRE(daemon.wait_ready(60s));
    const auto& o = cluster.osds.front();
    const std::map<std::string, std::string> refused{{"collector", "osd"},
                                                     {"target", osd_name(o.id)},
                                                     {"fsid", cluster.fsid},
                                                     {"probe", "BlueStore::_txc_committed_kv"},
                                                     {"reason", "offset_unverified"}};
    REQUIRE(poll_until(
        [&] { return daemon.scrape().find("cephscope_probe_attached", refused).size() == 1; },
        60s));
    CHECK(daemon.log_has("no function starts at", 5s));
    const auto m = daemon.scrape();
    CHECK(m.sum("cephscope_osd_stage_available",
                osd_labels(cluster, o.id, {{"stage", "bluestore_kv_commit"}})) == 0);
    for (const char* st : {"queue", "execute", "replication", "commit"}) {
      INFO(st);
      CHECK(m.sum("cephscope_osd_stage_available",
                  osd_labels(cluster, o.id, {{"stage", st}, {"reason", "ok"}})) == 1);
    }
    std::printf(
        "tampered container profile: _txc_committed_kv refused (offset_unverified), "
        "other stages ok\n");
    REQUIRE(daemon.stop() == std::optional<int>(0));
  }

  // 3. A shipped profile of the build is the host's word: the container's never shadows it.
  {
    Daemon daemon(dir, config(std::string(CEPHSCOPE_SOURCE_DIR) + "/config/profiles",
                              "/nonexistent/cephscope-resolver"));
    check_shipped_profile_used(cluster, daemon);
    CHECK_FALSE(daemon.log_has("profile made from the container's files", 1s));
  }
}

namespace {

// Wall-clock seconds at which PID started.
double process_start_wall(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  const double started = std::stod(field) / static_cast<double>(sysconf(_SC_CLK_TCK));
  timespec boot{};
  timespec wall{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  clock_gettime(CLOCK_REALTIME, &wall);
  return static_cast<double>(wall.tv_sec) + static_cast<double>(wall.tv_nsec) * 1e-9 -
         (static_cast<double>(boot.tv_sec) + static_cast<double>(boot.tv_nsec) * 1e-9 - started);
}

// The wall-clock time of the log line holding AT, from its logfmt stamp
// ("ts=2026-11-24T23:23:12.054Z", UTC).
double log_stamp_at(const std::string& log, std::size_t at) {
  const std::size_t line = log.rfind('\n', at);
  const std::size_t ts = log.find("ts=", line == std::string::npos ? 0 : line + 1);
  REQUIRE(ts != std::string::npos);
  const std::string stamp = log.substr(ts + 3, 24);
  std::tm tm{};
  const char* end = strptime(stamp.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  REQUIRE(end != nullptr);
  return static_cast<double>(timegm(&tm)) + std::stod(stamp.substr(19, 4));
}

}  // namespace

TEST_CASE("a containerised OSD that restarts has its probes live again within 2 s",
          "[e2e][ceph][osd][pickup][container]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const CephDaemon& osd = cluster.osds.back();
  REQUIRE_FALSE(osd.container.empty());  // a container cluster's test
  Daemon daemon(test_dir(cluster.dir), daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(wait_for_probes(cluster, daemon));  // the build's profile is now in memory and cached

  for (int round = 0; round < 3; ++round) {
    const pid_t old_pid = container_osd_pid(osd.container);
    REQUIRE(old_pid > 0);
    // As cephadm's unit restarts it: stopped (and removed, --rm), then run again.
    const auto restarted =
        run_command({std::string(CEPHSCOPE_SOURCE_DIR) + "/tests/ceph/container-cluster.sh",
                     "restart-osd", cluster.release, cluster.dir, std::to_string(osd.id)},
                    120s);
    INFO(restarted.out << restarted.err);
    REQUIRE(restarted.ok());
    pid_t pid = 0;
    auto seen = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - seen < 60s) {
      pid = container_osd_pid(osd.container);
      if (pid > 0 && pid != old_pid) {
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    REQUIRE(pid > 0);
    REQUIRE(pid != old_pid);
    seen = std::chrono::steady_clock::now();
    // "osd: osd.N (pid P): A of T probes attached": live when every probe of the plan is.
    // (a profile from the container's files logs its check first, on a line of its own)
    const std::string mark = "(pid " + std::to_string(pid) + "): ";
    unsigned n = 0;
    unsigned total = 0;
    auto attached_line = [&](const std::string& log) -> std::size_t {
      for (auto at = log.find(mark); at != std::string::npos; at = log.find(mark, at + 1)) {
        if (std::sscanf(log.c_str() + at + mark.size(), "%u of %u probes attached", &n, &total) ==
            2) {
          return at;
        }
      }
      return std::string::npos;
    };
    std::string log;
    std::size_t at = std::string::npos;
    for (auto t0 = std::chrono::steady_clock::now();
         at == std::string::npos && std::chrono::steady_clock::now() - t0 < 30s;) {
      std::this_thread::sleep_for(5ms);
      log = daemon.log();
      at = attached_line(log);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - seen).count();
    REQUIRE(at != std::string::npos);
    const std::string line = log.substr(at, log.find('\n', at) - at);
    INFO(line);
    CHECK(n == total);
    // From the process's start (/proc/PID/stat, 10 ms ticks) to the log line's own stamp.
    const double live = log_stamp_at(log, at) - process_start_wall(pid);
    std::printf(
        "%s restart %d: probes live %.3f s after its ceph-osd (pid %d) started (seen by the test "
        "%.2f s later): %s\n",
        osd.name.c_str(), round + 1, live, pid, seconds, line.c_str());
    CHECK(live >= 0);
    std::fflush(stdout);
    // The next round restarts an OSD that is up again.
    bool up = false;
    for (auto t0 = std::chrono::steady_clock::now();
         !up && std::chrono::steady_clock::now() - t0 < 120s; std::this_thread::sleep_for(1s)) {
      up = osds_up(cluster);
    }
    REQUIRE(up);
  }
}

namespace {

// Restarts the cluster's last OSD from `image` as cephadm's unit would; its new pid.
pid_t restart_from_image(const ClusterInfo& cluster, const std::string& image) {
  const CephDaemon& osd = cluster.osds.back();
  const pid_t old_pid = container_osd_pid(osd.container);
  const auto r =
      run_command({"env", "CEPH_IMAGE=" + image,
                   std::string(CEPHSCOPE_SOURCE_DIR) + "/tests/ceph/container-cluster.sh",
                   "restart-osd", cluster.release, cluster.dir, std::to_string(osd.id)},
                  180s);
  INFO(r.out << r.err);
  REQUIRE(r.ok());
  pid_t pid = 0;
  for (auto t0 = std::chrono::steady_clock::now();
       (pid == 0 || pid == old_pid) && std::chrono::steady_clock::now() - t0 < 60s;
       std::this_thread::sleep_for(50ms)) {
    pid = container_osd_pid(osd.container);
  }
  REQUIRE(pid > 0);
  REQUIRE(pid != old_pid);
  bool up = false;
  for (auto t0 = std::chrono::steady_clock::now();
       !up && std::chrono::steady_clock::now() - t0 < 120s; std::this_thread::sleep_for(1s)) {
    up = osds_up(cluster);
  }
  REQUIRE(up);
  return pid;
}

}  // namespace

TEST_CASE("a container without -dbg gets every stage from shipped or operator-supplied profiles",
          "[e2e][ceph][osd][profiles][nodbg][container]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  ClusterInfo cluster = *loaded;
  REQUIRE_FALSE(cluster.osds.front().container.empty());  // a container cluster's test
  const std::string image = "localhost/cephscope-ceph:" + cluster.release;
  const pid_t pid = restart_from_image(cluster, image + "-nodbg");
  cluster.osds.back().pid = pid;
  // This OSD's root holds no debug file of its ceph-osd.
  const std::string id = build_id_of("/proc/" + std::to_string(pid) + "/exe");
  const std::string debug_file =
      "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  CHECK_FALSE(fs::exists("/proc/" + std::to_string(pid) + "/root" + debug_file));
  std::printf("%s runs %s-nodbg (pid %d, build-id %s, no %s in its root)\n",
              cluster.osds.back().name.c_str(), image.c_str(), pid, id.c_str(), debug_file.c_str());

  const std::string dir = test_dir(cluster.dir);
  auto config = [&](const std::string& shipped) {
    return daemon_config() + "profiles:\n  cache_dir: " + dir + "/cache-nodbg\n  shipped_dirs: [" +
           shipped + "]\n  resolver: /nonexistent/cephscope-resolver\n";
  };
  {  // the profiles shipped in the repository
    Daemon daemon(dir, config(std::string(CEPHSCOPE_SOURCE_DIR) + "/config/profiles"));
    check_shipped_profile_used(cluster, daemon);
  }
  {  // an operator's profile directory, made with `profile generate` on another root.
    // Another machine's root: the -dbg image's file system, where the debug package is.
    const auto mounted = run_command({"podman", "image", "mount", image}, 60s);
    INFO(mounted.out << mounted.err);
    REQUIRE(mounted.ok());
    const std::string root = mounted.out.substr(0, mounted.out.find('\n'));
    const std::string operator_dir = dir + "/operator-profiles";
    fs::create_directories(operator_dir);
    // both probe sets of a ceph-osd: the stages and the bluestore layer
    std::vector<CommandResult> made;
    for (const std::string set : {"osd-stages", "bluestore-io"}) {
      std::string out = operator_dir;
      out.append("/").append(id).append(".").append(set).append(".json");
      std::string binary = root;
      binary.append("/usr/bin/ceph-osd");
      std::string debug = root;
      debug.append(debug_file);
      made.push_back(run_command({daemon_binary(), "profile", "generate", "--probe-set", set,
                                  "--binary", binary, "--debug-file", debug, "--out", out},
                                 600s));
    }
    (void)run_command({"podman", "image", "unmount", image}, 60s);
    for (const auto& m : made) {
      INFO(m.out << m.err);
      REQUIRE(m.ok());
    }
    Daemon daemon(dir, config(operator_dir));
    check_shipped_profile_used(cluster, daemon);
    CHECK(daemon.log_has(operator_dir, 1s));
  }
  // Back on the -dbg image, as the other tests expect.
  (void)restart_from_image(cluster, image);
}
