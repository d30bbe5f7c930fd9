#include "osd_stages_common.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "osd_control.h"

namespace cephscope::test {

using namespace std::chrono_literals;

const std::vector<std::string> kProbes = {
    "BlueStore::queue_transactions", "PrimaryLogPG::log_op_stats",
    "ReplicatedBackend::repop_commit", "BlueStore::_txc_aio_submit",
    "BlueStore::_txc_state_proc io_done call", "BlueStore::_txc_committed_kv",
    "ReplicatedBackend::do_repop_reply",
    // the bluestore layer's (daemon/collectors/osd/osd_bluestore.h)
    "KernelDevice::aio_write", "KernelDevice::write"};
const std::vector<std::string> kTier1Probes = {"PrimaryLogPG::log_op_stats",
                                               "ReplicatedBackend::repop_commit"};
// BlueStore's stages, in the order of Ceph's state_*_lat counters (kBlueStoreStates).
const std::vector<std::string> kStoreStages = {"bluestore_prepare", "bluestore_aio_wait",
                                               "bluestore_io_done", "bluestore_kv_queued",
                                               "bluestore_kv_commit"};
// The stages every op has: message, queue and execute.
const std::vector<std::string> kReadStages = {"throttle", "receive", "dispatch", "queue",
                                              "execute"};

std::vector<std::string> stages(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) {
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}
const std::vector<std::string> kSubopStages = stages({kReadStages, kStoreStages, {"commit"}});
const std::vector<std::string> kWriteStages =
    stages({kReadStages, kStoreStages, {"replication", "commit"}});

std::string osd_name(int id) {
  return "osd." + std::to_string(id);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The labels of one OSD's series: osd.N of this cluster (another cluster's osd.N has its own).
std::map<std::string, std::string> osd_labels(const ClusterInfo& c, int id,
                                              std::map<std::string, std::string> more) {
  more.emplace("ceph_daemon", osd_name(id));
  more.emplace("fsid", c.fsid);
  return more;
}

std::string daemon_config() {
  return osd_only_config(", slow_op_threshold: 1s, detail: always");
}

// Every stage of every OSD is measured in this build.
void check_stages_available(const ClusterInfo& cluster, const Metrics& m) {
  for (const auto& o : cluster.osds) {
    for (const auto& st : kWriteStages) {
      INFO(osd_name(o.id) << " stage " << st);
      CHECK(m.sum("cephscope_osd_stage_available",
                  osd_labels(cluster, o.id, {{"stage", st}, {"reason", "ok"}})) == 1);
    }
  }
}

// Waits until every probe is attached on each of the cluster's OSDs (the first OSD resolves
// the build's profile) and prints how long that took.
bool wait_for_probes(const ClusterInfo& cluster, Daemon& daemon,
                     const std::vector<std::string>& probes) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < 180s) {
    const auto m = daemon.scrape();
    bool attached = true;
    for (const auto& o : cluster.osds) {
      for (const auto& p : probes) {
        attached = attached && m.sum("cephscope_probe_attached", {{"collector", "osd"},
                                                                  {"target", osd_name(o.id)},
                                                                  {"fsid", cluster.fsid},
                                                                  {"probe", p},
                                                                  {"reason", "ok"}}) >= 1;
      }
    }
    if (attached) {
      std::printf("osd probes attached on %zu OSDs %.1f s after /readyz\n", cluster.osds.size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      return true;
    }
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

// A daemon given the shipped profiles: every OSD gets every stage from them.
void check_shipped_profile_used(const ClusterInfo& cluster, Daemon& daemon) {
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  const bool probes = wait_for_probes(cluster, daemon);
  if (!daemon.log_has("(shipped)", 5s)) {
    // sid moves: the mirror may serve a build newer than the committed profiles.
    const auto id = run_command({"sh", "-c",
                                 "readelf -n /proc/" + std::to_string(cluster.osds.front().pid) +
                                     "/exe | sed -n 's/.*Build ID: //p'"},
                                30s);
    FAIL("no shipped profile matches this "
         << cluster.release << " ceph-osd (build-id " << id.out << "): regenerate profiles with "
         << "config/profiles/generate.sh --release " << cluster.release << " and commit them");
  }
  REQUIRE(probes);
  check_stages_available(cluster, daemon.scrape());
}

// The ceph-osd of a cephadm-style container: the child of its init (podman --init).
pid_t container_osd_pid(const std::string& container) {
  const auto r = run_command({"podman", "inspect", "-f", "{{.State.Pid}}", container}, 30s);
  if (!r.ok()) {
    return 0;
  }
  const std::string init = r.out.substr(0, r.out.find('\n'));
  std::stringstream children(slurp("/proc/" + init + "/task/" + init + "/children"));
  for (pid_t child = 0; children >> child;) {
    if (slurp("/proc/" + std::to_string(child) + "/comm") == "ceph-osd\n") {
      return child;
    }
  }
  return 0;
}

}  // namespace cephscope::test
