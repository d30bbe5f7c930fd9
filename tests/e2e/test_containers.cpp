// Containerised Ceph as discovery sees it: cephadm's containers (the Reef cluster of the
// container layer), a Kubernetes pod as the kubelet lays it out (a podman pod under a kubepods
// cgroup parent, and a /var/log/pods directory), and three clusters on one host at once (the
// host's Pacific and the Reef and Tentacle containers: label ceph-three).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ceph_harness.h"
#include "osd_control.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"

using namespace cephscope::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string config(const std::string& pod_logs = "") {
  std::string c =
      "log_level: info\n"
      "discovery:\n"
      "  scan_interval: 1s\n";
  if (!pod_logs.empty()) {
    c += "  containers: {kubelet_pod_logs: " + pod_logs + "}\n";
  }
  return c +
         "collectors:\n"
         "  syscall: {enabled: false}\n"
         "  block: {enabled: false}\n"
         "  vfs: {enabled: false}\n"
         "  osd: {enabled: true, slow_op_threshold: 1s}\n"
         // the container's own libstdc++: a marker read through the OSD's root
         "usdt:\n"
         "  - {targets: [ceph-osd], binary: libstdc++.so.6, provider: libstdcxx, probe: throw}\n";
}

std::string osd_name(int id) {
  return "osd." + std::to_string(id);
}

// The one target_info series of osd.N of a cluster, or none.
std::vector<Sample> osd_info(const Metrics& m, const ClusterInfo& c, int id) {
  return m.find("cephscope_target_info", {{"ceph_daemon", osd_name(id)}, {"fsid", c.fsid}});
}

bool all_osds_seen(const Metrics& m, const std::vector<ClusterInfo>& clusters) {
  for (const auto& c : clusters) {
    for (const auto& o : c.osds) {
      if (osd_info(m, c, o.id).empty()) {
        return false;
      }
    }
  }
  return true;
}

double writes_of(const Metrics& m, const ClusterInfo& c) {
  double n = 0;
  for (const auto& o : c.osds) {
    n += m.sum("cephscope_osd_op_seconds_count",
               {{"ceph_daemon", osd_name(o.id)}, {"fsid", c.fsid}, {"op", "write"}});
  }
  return n;
}

std::string run_ok(const std::vector<std::string>& argv) {
  const auto r = run_command(argv, 120s);
  INFO(describe(argv) << "\n" << r.out << r.err);
  REQUIRE(r.ok());
  return r.out;
}

}  // namespace

TEST_CASE("cephadm's containers: osd.N of its fsid, in its container",
          "[e2e][container][cephadm]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE_FALSE(cluster.osds.front().container.empty());
  Daemon daemon(test_dir(cluster.dir), config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(poll_until([&] { return all_osds_seen(daemon.scrape(), {cluster}); }, 30s));
  const auto m = daemon.scrape();
  for (const auto& o : cluster.osds) {
    INFO(osd_name(o.id));
    const auto info = osd_info(m, cluster, o.id);
    REQUIRE(info.size() == 1);
    CHECK(info[0].labels.at("target_container") == o.container);
    CHECK(info[0].labels.count("target_pod") == 0);
    CHECK(m.sum("cephscope_osd_identity_conflict", {{"ceph_daemon", osd_name(o.id)}}) == 0);
    std::printf("%s: fsid %s, target_container %s\n", osd_name(o.id).c_str(), cluster.fsid.c_str(),
                o.container.c_str());
  }
  // libstdc++'s throw marker, from the container's copy of the library, in every OSD.
  const auto usdt_ok = [&](const Metrics& now) {
    for (const auto& o : cluster.osds) {
      if (now.sum("cephscope_probe_attached", {{"collector", "usdt"},
                                               {"target", osd_name(o.id)},
                                               {"fsid", cluster.fsid},
                                               {"reason", "ok"}}) != 1) {
        return false;
      }
    }
    return true;
  };
  REQUIRE(poll_until([&] { return usdt_ok(daemon.scrape()); }, 60s));
  const auto after = daemon.scrape();
  for (const auto& o : cluster.osds) {
    const auto events = after.find("cephscope_usdt_events_total",
                                   {{"ceph_daemon", osd_name(o.id)}, {"fsid", cluster.fsid}});
    CHECK(events.size() == 1);
    std::printf("%s: libstdcxx:throw attached in its container, %.0f throws\n",
                osd_name(o.id).c_str(), events.empty() ? -1.0 : events[0].value);
  }
  CHECK(daemon.log_has("libstdcxx:throw attached in /", 1s));
}

TEST_CASE("a Kubernetes pod: its name and namespace from the kubelet's layout",
          "[e2e][container][kubernetes]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE_FALSE(cluster.osds.front().container.empty());
  const std::string image = "localhost/cephscope-ceph:" + cluster.release;  // image.sh's name
  const std::string dir = test_dir(cluster.dir);
  // The kubelet's view: a pod UID, its cgroup under kubepods, /var/log/pods/NS_POD_UID.
  const std::string uid = "5c0a9e1d-7b3f-4a2c-9d8e-" + [] {
    char buf[13];
    std::snprintf(buf, sizeof buf, "%012x", static_cast<unsigned>(getpid()));
    return std::string(buf);
  }();
  const std::string pod = "rook-ceph-osd-90-7d9f8c6b5-x2x9q";
  fs::create_directories(dir + "/pods/rook-ceph_" + pod + "_" + uid + "/osd");
  fs::create_directories(dir + "/bin");
  fs::copy_file(CEPHSCOPE_FAKE_OSD, dir + "/bin/ceph-osd", fs::copy_options::overwrite_existing);
  const std::string pod_name = "cephscope-k8s-" + std::to_string(getpid());
  const std::string ctr_name = pod_name + "-osd";
  const std::string fsid = "5c0a9e1d-7b3f-4a2c-9d8e-00000000beef";

  Daemon daemon(dir, config(dir + "/pods"));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  run_ok({"podman", "pod", "create", "--name", pod_name, "--cgroup-parent",
          "/kubepods/besteffort/pod" + uid});
  struct PodGuard {
    std::string name;
    ~PodGuard() { run_command({"podman", "pod", "rm", "-f", "-t", "0", name}, 60s); }
  } guard{pod_name};
  run_ok({"podman", "run", "-d", "--rm", "--pod", pod_name, "--name", ctr_name, "-v",
          dir + "/bin:/x:ro", "--entrypoint", "/x/ceph-osd", image, "-i", "90", "--fsid", fsid});
  const auto pid_text = run_ok({"podman", "inspect", "-f", "{{.State.Pid}}", ctr_name});
  const std::string pid = pid_text.substr(0, pid_text.find('\n'));

  const std::map<std::string, std::string> want{{"ceph_daemon", "osd.90"}, {"fsid", fsid}};
  REQUIRE(poll_until([&] { return !daemon.scrape().find("cephscope_target_info", want).empty(); },
                     30s));
  const auto info = daemon.scrape().find("cephscope_target_info", want);
  REQUIRE(info.size() == 1);
  CHECK(info[0].labels.at("pid") == pid);
  CHECK(info[0].labels.at("target_pod") == pod);
  CHECK(info[0].labels.at("target_namespace") == "rook-ceph");
  CHECK(info[0].labels.at("target_container") == ctr_name);  // podman keeps its name
  CHECK(info[0].labels.count("namespace") == 0);             // never Prometheus Operator's labels
  CHECK(info[0].labels.count("pod") == 0);
  std::printf("pod %s/%s (uid %s): osd.90 pid %s in container %s\n", "rook-ceph", pod.c_str(),
              uid.c_str(), pid.c_str(), ctr_name.c_str());
}

TEST_CASE("three clusters on one host never merge", "[e2e][container][three]") {
  const char* dirs = std::getenv("CEPHSCOPE_CEPH_DIRS");
  INFO("CEPHSCOPE_CEPH_DIRS names the three clusters' directories (ctest -L ceph-three)");
  REQUIRE(dirs != nullptr);
  std::vector<ClusterInfo> clusters;
  std::stringstream list(dirs);
  for (std::string d; std::getline(list, d, ';');) {
    clusters.push_back(load_cluster_info(d + "/cluster.json"));
  }
  REQUIRE(clusters.size() == 3);
  std::set<std::string> fsids;
  for (const auto& c : clusters) {
    fsids.insert(c.fsid);
    std::printf("%s cluster %s: %zu OSDs, RSS %.0f MB\n", c.release.c_str(), c.fsid.c_str(),
                c.osds.size(), static_cast<double>(cluster_rss_bytes(c)) / 1e6);
  }
  REQUIRE(fsids.size() == 3);
  std::fflush(stdout);

  Daemon daemon(test_dir(clusters.front().dir), config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(poll_until([&] { return all_osds_seen(daemon.scrape(), clusters); }, 60s));
  auto m = daemon.scrape();
  CHECK(m.find("cephscope_target_info", {{"ceph_daemon", "osd.0"}}).size() == 3);
  CHECK(m.sum("cephscope_osd_identity_conflict", {}) == 0);
  // Wait until every OSD's probes are in, then write to each cluster in turn: only its own
  // series move, by what its OSDs count.
  REQUIRE(poll_until(
      [&] {
        return daemon.scrape().sum("cephscope_probe_attached",
                                   {{"collector", "osd"},
                                    {"probe", "PrimaryLogPG::log_op_stats"},
                                    {"reason", "ok"}}) == 9;
      },
      180s, 200ms));
  for (const auto& c : clusters) {
    std::map<std::string, double> before;
    m = daemon.scrape();
    for (const auto& other : clusters) {
      before[other.fsid] = writes_of(m, other);
    }
    const auto perf0 = snapshot_osds(c);
    BenchOptions opt;
    opt.mode = BenchMode::kWrite;
    opt.seconds = 3;
    run_rados_bench(c, opt);
    std::this_thread::sleep_for(1500ms);
    const auto ceph = sum(delta(perf0, snapshot_osds(c)));
    m = daemon.scrape();
    for (const auto& other : clusters) {
      const double moved = writes_of(m, other) - before[other.fsid];
      INFO(c.release << " bench; " << other.release << " series moved by " << moved);
      if (other.fsid == c.fsid) {
        CHECK(moved == static_cast<double>(ceph.op_w));
        std::printf("%s: %.0f writes under fsid %s, Ceph op_w %llu\n", c.release.c_str(), moved,
                    c.fsid.c_str(), static_cast<unsigned long long>(ceph.op_w));
      } else {
        CHECK(moved == 0);
      }
    }
    rados_cleanup(c);
  }
}
