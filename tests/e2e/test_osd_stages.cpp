// e2e (root, live test cluster): the OSD stage collector against Ceph's own perf counters.
//
// One daemon with only the osd collector on. The test waits until the OSD probes are attached
// and every stage is reported available on every OSD of the cluster, then
//   1. runs a 4 KiB rados bench write and compares, per OSD, the count of write ops in
//      cephscope_osd_op_seconds with the OSD's op_w delta (0.5%), the sum over OSDs with rados
//      bench's total (+ its metadata object), the subop count with subop_w, and the means with
//      op_w_latency / subop_w_latency (10%); every write stage is measured for every op and
//      the stage means add up to no more than the whole op's mean; the BlueStore stages agree
//      with BlueStore's own state_*_lat counters; each OSD's writes as primary are counted once
//      each under the replica that answered last (tier 2), always another OSD of the cluster;
//   2. runs a seq read bench on those objects: op_r counts and op_r_latency the same way;
//   3. pauses one OSD with SIGSTOP for 2 s during a bench: the primaries that replicate to it
//      count slow ops under stage="replication", and their slow-op records and last-replica
//      counts name the paused OSD as the replica that answered last;
//   4. restarts one OSD under the daemon: its series never go back (the gone process's stats
//      slot is kept), and the new process's writes count exactly as its op_w.
//
// Another cluster's osd.N on the same host is a target of its own (its fsid): every series
// read here is this cluster's.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ceph_harness.h"
#include "osd_control.h"
#include "osd_stages_common.h"
#include "osd_views.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"
#include "support/subprocess.h"

using namespace cephscope::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// BlueStore stages (client writes + replicated writes) against BlueStore's own state_*_lat
// counters of the same transactions: counts within 1% (Ceph's also counts the few PG
// metadata transactions), means within 10% plus 20 us above Ceph's, 50 us below it. prepare,
// aio_wait, io_done and kv_queued are BlueStore's own stamps and figures (io_done is what its
// log_state_latency returned). kv_commit ends at the entry of _txc_committed_kv, a moment
// before Ceph reads its clock after the sequencer lock, so the probe's own cost, and any time
// the OSD's thread waits or is preempted between the two, lands in Ceph's figure only.
void check_store_stages(const ClusterInfo& cluster, const std::map<int, OsdView>& a,
                        const std::map<int, OsdView>& b, const OsdSnapshot& perf) {
  for (const auto& o : cluster.osds) {
    std::printf("  %s BlueStore stages, cephscope / Ceph (count, mean us):",
                osd_name(o.id).c_str());
    for (std::size_t i = 0; i < kStoreStages.size(); ++i) {
      const auto& st = kStoreStages[i];
      const Hist ours =
          (b.at(o.id).stage.at("write").at(st) - a.at(o.id).stage.at("write").at(st)) +
          (b.at(o.id).subop_stage.at(st) - a.at(o.id).subop_stage.at(st));
      const LatencyCounter& ceph = perf.at(o.id).bluestore_state[i];
      const auto n = static_cast<double>(ceph.avgcount);
      std::printf(" %s %.0f/%.0f %.1f/%.1f", st.substr(10).c_str(), ours.count, n,
                  ours.mean() * 1e6, ceph.average() * 1e6);
      INFO(osd_name(o.id) << " " << st << " against Ceph's " << kBlueStoreStates[i]);
      CHECK(n > 0);
      CHECK(within(ours.count, n, 0.01));
      CHECK(ours.mean() - ceph.average() <= 0.10 * ceph.average() + 20e-6);
      CHECK(ceph.average() - ours.mean() <= 0.10 * ceph.average() + 50e-6);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

// Tier 2: between M0 and M1, each OSD's replicated client writes as primary (a size-3 pool:
// two commit replies each) counted once each under the replica that answered last, another
// OSD of the cluster. Returns, per replica, the writes it was last for.
std::map<std::string, double> check_last_replicas(const ClusterInfo& cluster, const Metrics& m0,
                                                  const Metrics& m1) {
  std::map<std::string, double> by_replica;
  for (const auto& o : cluster.osds) {
    const auto writes = osd_labels(cluster, o.id, {{"op", "write"}});
    const double ops = m1.sum("cephscope_osd_op_seconds_count", writes) -
                       m0.sum("cephscope_osd_op_seconds_count", writes);
    double last = 0;
    std::printf("  %s: %.0f writes as primary; the replica that answered last:",
                osd_name(o.id).c_str(), ops);
    for (const auto& s : m1.find("cephscope_osd_replica_last_total", osd_labels(cluster, o.id))) {
      const std::string& replica = s.labels.at("replica");
      const double n = s.value - m0.sum("cephscope_osd_replica_last_total", s.labels);
      std::printf(" %s %.0f", replica.c_str(), n);
      INFO(osd_name(o.id) << " last replica " << replica);
      CHECK(replica != osd_name(o.id));
      CHECK(std::any_of(cluster.osds.begin(), cluster.osds.end(),
                        [&](const auto& r) { return osd_name(r.id) == replica; }));
      last += n;
      by_replica[replica] += n;
    }
    std::printf("\n");
    INFO(osd_name(o.id));
    CHECK(ops > 0);
    CHECK(within(last, ops, 0.005));
  }
  std::fflush(stdout);
  return by_replica;
}

// The slow-op records of the other primaries' writes that waited for the paused VICTIM (their
// longest stage replication, VICTIM among their replicas): tier 2 names it as the replica that
// answered last, after the other one and no earlier than the replication stage's end (the
// reply is taken a moment before Ceph marks sub_op_commit_rec). Returns how many said so.
int check_last_replica_records(const ClusterInfo& cluster, const Daemon& daemon, int victim) {
  int status = 0;
  const auto body = http_get(daemon.port(), "/debug/slow-ops", &status);
  REQUIRE(body.has_value());
  REQUIRE(status == 200);
  const auto ops = nlohmann::json::parse(*body).at("ops");
  int waited = 0;
  int named = 0;
  for (const auto& op : ops) {
    if (op.at("kind") != "osd" || op.at("fsid") != cluster.fsid ||
        op.at("ceph_daemon") == osd_name(victim)) {
      continue;
    }
    const auto replicas = op.at("replicas").get<std::vector<std::string>>();
    if (longest_stage(op) != "replication" ||
        std::find(replicas.begin(), replicas.end(), std::to_string(victim)) == replicas.end()) {
      continue;
    }
    ++waited;
    INFO(op.dump());
    const auto& commits = op.at("replica_commits");
    REQUIRE(commits.size() == 2);
    const double at = commits.back().at("seconds").get<double>();
    CHECK(commits.back().at("osd") == std::to_string(victim));
    CHECK(commits.front().at("seconds").get<double>() < at);
    CHECK(at >= op.at("stages").at("replication").get<double>() - 1e-3);
    CHECK(at <= op.at("seconds").get<double>());
    named += op.at("last_replica") == std::to_string(victim) ? 1 : 0;
  }
  std::printf(
      "  slow-op records: %zu kept, %d waited for osd.%d in replication, %d name it the replica "
      "that answered last\n",
      ops.size(), waited, victim, named);
  CHECK(named == waited);
  return named;
}

// Waits until DAEMON watches every OSD of CLUSTER, then empties the bench pool.
void watch_emptied(const ClusterInfo& cluster, Daemon& daemon) {
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(wait_for_probes(cluster, daemon));
  rados_cleanup(cluster);
}

}  // namespace

TEST_CASE("the OSD stage collector agrees with Ceph's perf counters", "[e2e][ceph][osd]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  const auto sockets = host_osd_sockets(cluster);

  Daemon daemon(test_dir(cluster.dir), daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));

  REQUIRE(wait_for_probes(cluster, daemon));

  check_stages_available(cluster, daemon.scrape());
  rados_cleanup(cluster);
  settle();

  // ------------------------------------------------------------------ 1. writes and subops
  auto perf0 = snapshot_host(sockets);
  const auto m0 = daemon.scrape();
  auto v0 = views(cluster, m0);
  const auto w = bench(cluster, BenchMode::kWrite, 8);
  settle();
  auto perf1 = snapshot_host(sockets);
  const auto m1 = daemon.scrape();
  auto v1 = views(cluster, m1);
  const auto dw = delta(perf0, perf1);
  std::printf("4 KiB writes:\n");
  const double writes = check_ops(cluster, "write", v0, v1, dw);
  std::printf("  sum of write ops %.0f, rados bench %llu + %llu metadata\n", writes,
              static_cast<unsigned long long>(w.total_ops),
              static_cast<unsigned long long>(kBenchMetadataOps));
  CHECK(within(writes, static_cast<double>(w.total_ops + kBenchMetadataOps), 0.005));
  for (const auto& o : cluster.osds) {
    const Hist h = v1.at(o.id).subop - v0.at(o.id).subop;
    const auto& c = dw.at(o.id);
    std::printf("  %s subops: cephscope %.0f, mean %.3f ms | Ceph subop_w %llu, latency %.3f ms\n",
                osd_name(o.id).c_str(), h.count, h.mean() * 1e3,
                static_cast<unsigned long long>(c.subop_w), c.subop_w_latency.average() * 1e3);
    INFO(osd_name(o.id) << " subops");
    CHECK(c.subop_w > 0);
    CHECK(within(h.count, static_cast<double>(c.subop_w), 0.005));
    CHECK(within(h.mean(), c.subop_w_latency.average(), 0.10));
  }
  check_stages(cluster, "write", kWriteStages, v0, v1);
  for (const auto& o : cluster.osds) {
    std::printf("  %s subop stages (mean us):", osd_name(o.id).c_str());
    for (const auto& st : kSubopStages) {
      const Hist h = v1.at(o.id).subop_stage.at(st) - v0.at(o.id).subop_stage.at(st);
      std::printf(" %s %.0f", st.c_str(), h.mean() * 1e6);
      INFO(osd_name(o.id) << " subop stage " << st);
      CHECK(h.count > 0);
    }
    std::printf("\n");
  }
  check_store_stages(cluster, v0, v1, dw);
  check_last_replicas(cluster, m0, m1);

  // ------------------------------------------------------------------ 2. reads
  perf0 = snapshot_host(sockets);
  v0 = views(cluster, daemon.scrape());
  bench(cluster, BenchMode::kSeq, 5);
  settle();
  perf1 = snapshot_host(sockets);
  v1 = views(cluster, daemon.scrape());
  std::printf("4 KiB reads:\n");
  check_ops(cluster, "read", v0, v1, delta(perf0, perf1));
  check_stages(cluster, "read", kReadStages, v0, v1);
  rados_cleanup(cluster);

  // ------------------------------------------------------------------ 3. a forced slow op
  {
    const auto before = daemon.scrape();
    const auto paused = slow_writes_while_replica_paused(cluster, daemon);
    INFO(osd_name(paused.victim) << " paused 2 s: the other primaries wait for its commits");
    CHECK(paused.replication > 0);
    const auto last = check_last_replicas(cluster, before, daemon.scrape());
    CHECK(last.contains(osd_name(paused.victim)));
    CHECK(check_last_replica_records(cluster, daemon, paused.victim) > 0);
    rados_cleanup(cluster);
  }

  const auto rc = daemon.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

// all but replication (EC ops carry no subop events; waiting for the other shards counts in
// commit). No EC write is taken for a lost start.
TEST_CASE("EC pool writes are counted per op with the stages that apply", "[e2e][ceph][osd]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  ClusterInfo ec = *loaded;
  REQUIRE(ec.osds.size() == 3);
  ec.pool = "cephscope-ec";
  ceph_json(ec, {"osd", "erasure-code-profile", "set", "cephscope-k2m1", "k=2", "m=1",
                 "crush-failure-domain=osd", "--force"});
  ceph_json(ec, {"osd", "pool", "create", ec.pool, "8", "8", "erasure", "cephscope-k2m1"});
  ceph_json(ec, {"osd", "pool", "application", "enable", ec.pool, "rados"});
  struct DropPool {
    const ClusterInfo& c;
    ~DropPool() {
      try {
        ceph_json(c, {"osd", "pool", "rm", c.pool, c.pool, "--yes-i-really-really-mean-it"});
      } catch (const std::exception& e) {
        std::fprintf(stderr, "removing pool %s: %s\n", c.pool.c_str(), e.what());
      }
    }
  } drop{ec};
  const auto t0 = std::chrono::steady_clock::now();
  while (!pgs_clean(ec) && std::chrono::steady_clock::now() - t0 < 120s) {
    std::this_thread::sleep_for(500ms);
  }
  REQUIRE(pgs_clean(ec));
  const auto sockets = host_osd_sockets(ec);

  Daemon daemon(test_dir(ec.dir), daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(wait_for_probes(ec, daemon));

  const auto lost = [&] {
    return daemon.scrape().sum("cephscope_events_lost_total",
                               {{"collector", "osd"}, {"reason", "no_start"}});
  };
  const double lost0 = lost();
  const auto perf0 = snapshot_host(sockets);
  const auto v0 = views(ec, daemon.scrape());
  const auto w = bench(ec, BenchMode::kWrite, 5);
  settle();
  const auto perf1 = snapshot_host(sockets);
  const auto v1 = views(ec, daemon.scrape());
  std::printf("4 KiB writes to an EC pool (k=2, m=1):\n");
  const double writes = check_ops(ec, "write", v0, v1, delta(perf0, perf1));
  CHECK(within(writes, static_cast<double>(w.total_ops + kBenchMetadataOps), 0.005));
  // the primary writes its own shard with the client op: its execute and BlueStore stages
  // are joined; the other shards' commits carry no replication events and count in commit
  check_stages(ec, "write", kSubopStages, v0, v1);
  CHECK(lost() == lost0);
  rados_cleanup(ec);
}

// With Ceph's op tracker off (osd_enable_op_tracker false, read at OSD start), an op carries no
// events: every op is still counted and timed whole, the stages Ceph stamps outside the
// events (the Message's receive stamps, dequeued_time, BlueStore's) are still measured, and
// the stages only events can place (dispatch, queue; on the primary replication and commit)
// are not counted at all rather than guessed. One OSD runs without the tracker, the others
// with it: ops whose primary it is and the subops it receives are checked.
TEST_CASE("with Ceph's op tracker off, ops are counted and event-only stages stay empty",
          "[e2e][ceph][osd]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  const int untracked = cluster.osds.front().id;
  const Launch normal = launch_of(cluster.osds.front().pid);
  Launch without_tracker = normal;
  without_tracker.argv.emplace_back("--osd_enable_op_tracker=false");
  struct TrackerBack {
    ClusterInfo& c;
    int id;
    const Launch& how;
    ~TrackerBack() {
      if (!restart_osd(c, id, how)) {
        std::fprintf(stderr, "osd.%d did not come back with its op tracker on\n", id);
      }
    }
  } back{cluster, untracked, normal};
  REQUIRE(restart_osd(cluster, untracked, without_tracker).has_value());
  const auto sockets = host_osd_sockets(cluster);

  Daemon daemon(test_dir(cluster.dir), daemon_config());
  DaemonLogOnFailure print_log{daemon};
  watch_emptied(cluster, daemon);
  settle();

  const auto perf0 = snapshot_host(sockets);
  const auto v0 = views(cluster, daemon.scrape());
  bench(cluster, BenchMode::kWrite, 5);
  settle();
  const auto perf1 = snapshot_host(sockets);
  const auto v1 = views(cluster, daemon.scrape());
  std::printf("4 KiB writes, %s without its op tracker:\n", osd_name(untracked).c_str());
  check_ops(cluster, "write", v0, v1, delta(perf0, perf1));
  const Hist ops = v1.at(untracked).op.at("write") - v0.at(untracked).op.at("write");
  const Hist subops = v1.at(untracked).subop - v0.at(untracked).subop;
  const auto count = [&](const std::string& st) {
    return (v1.at(untracked).stage.at("write").at(st) - v0.at(untracked).stage.at("write").at(st))
        .count;
  };
  const auto subop_count = [&](const std::string& st) {  // subops have no replication stage
    const auto& a = v0.at(untracked).subop_stage;
    const auto& b = v1.at(untracked).subop_stage;
    return b.count(st) != 0 ? (b.at(st) - a.at(st)).count : 0.0;
  };
  std::printf("  %s: %.0f writes, %.0f subops; stage counts (write/subop):",
              osd_name(untracked).c_str(), ops.count, subops.count);
  for (const auto& st : kWriteStages) {
    std::printf(" %s %.0f/%.0f", st.c_str(), count(st), subop_count(st));
  }
  std::printf("\n");
  std::fflush(stdout);
  REQUIRE(ops.count > 0);
  REQUIRE(subops.count > 0);
  for (const auto& st : stages({{"throttle", "receive", "execute"}, kStoreStages})) {
    INFO("stage " << st);
    CHECK(within(count(st), ops.count, 0.01));
    CHECK(within(subop_count(st), subops.count, 0.01));
  }
  for (const auto& st : {"dispatch", "queue", "replication", "commit"}) {
    INFO("stage " << st);
    CHECK(count(st) == 0);
    CHECK(subop_count(st) == (std::string(st) == "commit" ? subops.count : 0));
  }
  rados_cleanup(cluster);
  const auto rc = daemon.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

// An OSD process that goes while the daemon watches leaves what its stats slot counted in the
// daemon's keeping: the OSD's series go on from where they were, never back, and its new
// process's ops are counted from its first one, exactly as Ceph's op_w of the new process.
TEST_CASE("an OSD restarted under the daemon keeps its counts and counts on", "[e2e][ceph][osd]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  const int id = cluster.osds.back().id;
  const Launch how = launch_of(cluster.osds.back().pid);
  const auto sockets = host_osd_sockets(cluster);

  Daemon daemon(test_dir(cluster.dir), daemon_config());
  DaemonLogOnFailure print_log{daemon};
  watch_emptied(cluster, daemon);
  bench(cluster, BenchMode::kWrite, 3);
  settle();
  const auto before = views(cluster, daemon.scrape());
  const double writes = before.at(id).op.at("write").count;
  const double subops = before.at(id).subop.count;
  REQUIRE(writes > 0);
  REQUIRE(subops > 0);

  const auto pid = restart_osd(cluster, id, how);
  REQUIRE(pid.has_value());
  // the new process's probes, not the old one's statuses, which last until its detach
  INFO("daemon log:\n" << daemon.log());
  const std::string all = std::to_string(kProbes.size());  // every probe of both tiers
  REQUIRE(daemon.log_has(osd_name(id) + " (pid " + std::to_string(*pid) + "): " + all + " of " +
                             all + " probes attached",
                         60s));
  settle();
  const auto perf0 = snapshot_host(sockets);
  const auto v0 = views(cluster, daemon.scrape());
  std::printf("%s restarted (pid %d): %.0f writes and %.0f subops before, %.0f and %.0f after\n",
              osd_name(id).c_str(), *pid, writes, subops, v0.at(id).op.at("write").count,
              v0.at(id).subop.count);
  CHECK(v0.at(id).op.at("write").count >= writes);
  CHECK(v0.at(id).subop.count >= subops);

  bench(cluster, BenchMode::kWrite, 3);
  settle();
  const auto perf1 = snapshot_host(sockets);
  const auto v1 = views(cluster, daemon.scrape());
  std::printf("4 KiB writes after %s's restart:\n", osd_name(id).c_str());
  check_ops(cluster, "write", v0, v1, delta(perf0, perf1));
  rados_cleanup(cluster);
  const auto rc = daemon.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}
