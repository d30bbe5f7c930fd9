// e2e (root, live test cluster): the OSD stage collector against Ceph's own perf counters.
//
// One daemon with only the osd collector on. The test waits until the OSD probes are attached
// and every stage is reported available on every OSD of the cluster, then
//   1. runs a 4 KiB rados bench write and compares, per OSD, the count of write ops in
//      cephscope_osd_op_seconds with the OSD's op_w delta (0.5%), the sum over OSDs with rados
//      bench's total (+ its metadata object), the subop count with subop_w, and the means with
//      op_w_latency / subop_w_latency (10%); every write stage is measured for every op and
//      the stage means add up to no more than the whole op's mean; the BlueStore stages agree
//      with BlueStore's own state_*_lat counters;
//   2. runs a seq read bench on those objects: op_r counts and op_r_latency the same way;
//   3. pauses one OSD with SIGSTOP for 2 s during a bench: the primaries that replicate to it
//      count slow ops under stage="replication".
//
// Another cluster's osd.N on the same host is a target of its own (its fsid): every series
// read here is this cluster's.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

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
#include "support/daemon_runner.h"
#include "support/metrics_text.h"
#include "support/subprocess.h"

using namespace cephscope::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Admin sockets of the cluster's OSDs. Another cluster's osd.N on the host is a target of its
// own (its fsid tells the series apart), so only ours count.
std::map<int, std::string> host_osd_sockets(const ClusterInfo& cluster) {
  std::map<int, std::string> out;
  for (const auto& o : cluster.osds) {
    out[o.id] = o.asok;
  }
  return out;
}

// Per OSD id: the perf counters of the cluster's ceph-osd with that id.
OsdSnapshot snapshot_host(const std::map<int, std::string>& sockets) {
  OsdSnapshot out;
  for (const auto& [id, sock] : sockets) {
    out[id] = parse_osd_perf_dump(admin_socket_command(sock, R"({"prefix":"perf dump"})"));
  }
  return out;
}

// What cephscope says about one OSD.
struct Hist {
  double count = 0;
  double sum = 0;
  [[nodiscard]] double mean() const { return count > 0 ? sum / count : 0; }
};
Hist operator-(const Hist& a, const Hist& b) {
  return {a.count - b.count, a.sum - b.sum};
}
Hist operator+(const Hist& a, const Hist& b) {
  return {a.count + b.count, a.sum + b.sum};
}

Hist hist(const Metrics& m, const std::string& name, const std::map<std::string, std::string>& l) {
  return {m.sum(name + "_count", l), m.sum(name + "_sum", l)};
}

struct OsdView {
  std::map<std::string, Hist> op;  // by op
  Hist subop;
  std::map<std::string, std::map<std::string, Hist>> stage;  // op -> stage
  std::map<std::string, Hist> subop_stage;
  std::map<std::string, double> slow;  // stage -> count (writes)
};

OsdView view(const Metrics& m, const ClusterInfo& c, int id) {
  OsdView v;
  for (const char* op : {"read", "write", "other"}) {
    v.op[op] = hist(m, "cephscope_osd_op_seconds", osd_labels(c, id, {{"op", op}}));
    for (const auto& st : kWriteStages) {
      v.stage[op][st] =
          hist(m, "cephscope_osd_op_stage_seconds", osd_labels(c, id, {{"op", op}, {"stage", st}}));
    }
  }
  v.subop = hist(m, "cephscope_osd_subop_seconds", osd_labels(c, id));
  for (const auto& st : kSubopStages) {
    v.subop_stage[st] =
        hist(m, "cephscope_osd_subop_stage_seconds", osd_labels(c, id, {{"stage", st}}));
  }
  for (const auto& st : kWriteStages) {
    v.slow[st] =
        m.sum("cephscope_osd_slow_ops_total", osd_labels(c, id, {{"op", "write"}, {"stage", st}}));
  }
  return v;
}

std::map<int, OsdView> views(const ClusterInfo& c, const Metrics& m) {
  std::map<int, OsdView> out;
  for (const auto& o : c.osds) {
    out[o.id] = view(m, c, o.id);
  }
  return out;
}

bool within(double a, double b, double rel) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(b), 1.0);
}

// Lets in-flight ops finish and the counters settle before a snapshot.
void settle() {
  std::this_thread::sleep_for(1500ms);
}

// Checks the whole-op histogram of `op` against the counters, per OSD; returns the sum.
double check_ops(const ClusterInfo& cluster, const char* op, const std::map<int, OsdView>& a,
                 const std::map<int, OsdView>& b, const OsdSnapshot& perf) {
  double total = 0;
  for (const auto& o : cluster.osds) {
    const Hist h = b.at(o.id).op.at(op) - a.at(o.id).op.at(op);
    const OsdCounters& c = perf.at(o.id);
    const bool w = std::string(op) == "write";
    const auto n = static_cast<double>(w ? c.op_w : c.op_r);
    const LatencyCounter& lat = w ? c.op_w_latency : c.op_r_latency;
    std::printf(
        "  %s %s: cephscope %.0f ops, mean %.3f ms | Ceph op_%s %.0f, latency %.3f ms "
        "(%+.2f%% count, %+.1f%% mean)\n",
        osd_name(o.id).c_str(), op, h.count, h.mean() * 1e3, w ? "w" : "r", n, lat.average() * 1e3,
        100 * (h.count - n) / std::max(n, 1.0),
        100 * (h.mean() - lat.average()) / std::max(lat.average(), 1e-9));
    INFO(osd_name(o.id) << " " << op);
    CHECK(n > 0);
    CHECK(within(h.count, n, 0.005));
    CHECK(within(h.mean(), lat.average(), 0.10));
    total += h.count;
  }
  std::fflush(stdout);
  return total;
}

void check_stages(const ClusterInfo& cluster, const char* op,
                  const std::vector<std::string>& stages, const std::map<int, OsdView>& a,
                  const std::map<int, OsdView>& b) {
  for (const auto& o : cluster.osds) {
    const Hist whole = b.at(o.id).op.at(op) - a.at(o.id).op.at(op);
    double sum_of_means = 0;
    std::printf("  %s %s stages (mean us):", osd_name(o.id).c_str(), op);
    for (const auto& st : stages) {
      const Hist h = b.at(o.id).stage.at(op).at(st) - a.at(o.id).stage.at(op).at(st);
      std::printf(" %s %.0f (%.0f)", st.c_str(), h.mean() * 1e6, h.count);
      INFO(osd_name(o.id) << " " << op << " stage " << st);
      CHECK(h.count > 0);
      // every op measures every stage of its kind (a stage can take 0 ns: it is folded)
      CHECK(within(h.count, whole.count, 0.01));
      sum_of_means += h.mean();
    }
    std::printf(" | sum %.0f us, whole %.0f us\n", sum_of_means * 1e6, whole.mean() * 1e6);
    INFO(osd_name(o.id) << " " << op);
    CHECK(sum_of_means <= whole.mean() * (1 + 1e-9));  // reads: equal up to rounding
  }
  std::fflush(stdout);
}

// BlueStore stages (client writes + replicated writes) against BlueStore's own state_*_lat
// counters of the same transactions: counts within 1% (Ceph's also counts the few PG
// metadata transactions), means within 10% or 20 us (the probe ends an interval a moment
// before Ceph reads its clock, and its own cost lands in Ceph's figure).
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
      CHECK(std::fabs(ours.mean() - ceph.average()) <= 0.10 * ceph.average() + 20e-6);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

BenchSummary bench(const ClusterInfo& cluster, BenchMode mode, int seconds) {
  BenchOptions opt;
  opt.mode = mode;
  opt.seconds = seconds;
  auto s = run_rados_bench(cluster, opt);
  std::printf("rados bench %s: %llu ops, %.0f IOPS, avg latency %.2f ms\n", to_string(mode),
              static_cast<unsigned long long>(s.total_ops), s.avg_iops, s.avg_latency_s * 1e3);
  std::fflush(stdout);
  return s;
}

// The slow-op records of a replica paused for 2 s (/debug/slow-ops): the other primaries'
// writes that waited for it, with the time in replication, the paused OSD among the replicas,
// and the client, object and PG that Ceph itself gives (`ceph osd map`).
void check_slow_records(const ClusterInfo& cluster, const Daemon& daemon, int victim) {
  int status = 0;
  const auto body = http_get(daemon.port(), "/debug/slow-ops", &status);
  REQUIRE(body.has_value());
  REQUIRE(status == 200);
  const auto j = nlohmann::json::parse(*body);
  int waited = 0;
  int mapped = 0;
  for (const auto& op : j.at("ops")) {
    if (op.at("fsid") != cluster.fsid || op.at("ceph_daemon") == osd_name(victim)) {
      continue;
    }
    const auto& stages = op.at("stages");
    std::string longest;
    double longest_s = -1;
    for (const auto& [name, secs] : stages.items()) {
      if (secs.get<double>() > longest_s) {
        longest_s = secs.get<double>();
        longest = name;
      }
    }
    const auto replicas = op.at("replicas").get<std::vector<std::string>>();
    const std::string object = op.at("object");
    INFO(op.dump());
    CHECK(op.at("seconds").get<double>() >= 1.0);
    CHECK(op.at("op") == "write");
    CHECK(op.at("client").get<std::string>().starts_with("client."));
    CHECK(op.at("tid").get<std::uint64_t>() > 0);
    CHECK(object.starts_with("benchmark_data_"));
    if (longest != "replication" ||
        std::find(replicas.begin(), replicas.end(), std::to_string(victim)) == replicas.end()) {
      continue;
    }
    ++waited;
    if (mapped < 3) {  // Ceph's own placement of the object: its pg, e.g. "2.1f"
      const auto map = run_command(
          tool_argv(cluster, "ceph", {"osd", "map", cluster.pool, object, "--format", "json"}));
      REQUIRE(map.ok());
      const auto placed = nlohmann::json::parse(map.out);
      CHECK(placed.at("pgid") == op.at("pg"));
      CHECK(placed.at("pool_id") == op.at("pool"));
      ++mapped;
    }
  }
  std::printf(
      "  slow-op records: %zu kept, %d from other primaries waiting for osd.%d in "
      "replication, %d checked against ceph osd map\n",
      j.at("ops").size(), waited, victim, mapped);
  CHECK(waited > 0);
  CHECK(mapped > 0);
  CHECK(daemon.log_has("slow op on", 1s));
}

// Pauses the cluster's last OSD (SIGSTOP) for PAUSE, DELAY into a write bench of SECONDS:
// its primaries' writes wait for it. Returns the paused OSD's id.
int pause_replica_during_bench(const ClusterInfo& cluster, std::chrono::seconds delay,
                               std::chrono::seconds pause, int seconds) {
  const auto& victim = cluster.osds.back();
  // A container's OSD may have been restarted since cluster.json was written.
  const pid_t victim_pid =
      victim.container.empty() ? victim.pid : container_osd_pid(victim.container);
  REQUIRE(victim_pid > 0);
  std::thread pauser([&] {
    std::this_thread::sleep_for(delay);
    kill(victim_pid, SIGSTOP);
    std::this_thread::sleep_for(pause);
    kill(victim_pid, SIGCONT);
  });
  bench(cluster, BenchMode::kWrite, seconds);
  pauser.join();
  return victim.id;
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
  auto v0 = views(cluster, daemon.scrape());
  const auto w = bench(cluster, BenchMode::kWrite, 8);
  settle();
  auto perf1 = snapshot_host(sockets);
  auto v1 = views(cluster, daemon.scrape());
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
    v0 = views(cluster, daemon.scrape());
    const int victim = pause_replica_during_bench(cluster, 2s, 2s, 6);
    settle();
    v1 = views(cluster, daemon.scrape());
    double replication = 0;
    for (const auto& o : cluster.osds) {
      std::printf("  %s slow writes by stage:", osd_name(o.id).c_str());
      for (const auto& st : kWriteStages) {
        const double d = v1.at(o.id).slow.at(st) - v0.at(o.id).slow.at(st);
        std::printf(" %s %.0f", st.c_str(), d);
        if (o.id != victim && st == "replication") {
          replication += d;
        }
      }
      std::printf("\n");
    }
    std::fflush(stdout);
    INFO(osd_name(victim) << " paused 2 s: the other primaries wait for its commits");
    CHECK(replication > 0);
    rados_cleanup(cluster);
  }

  const auto rc = daemon.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

// Tier 1 (collectors.osd.detail: never): one uprobe hit per OSD op, counted by the kernel's
// own BPF accounting, and from it the whole op and the stages Ceph's events bound; the ops
// agree with Ceph's counters as in tier 2, and a paused replica shows under replication.
TEST_CASE("tier 1: one probe hit per OSD op gives the whole op and the event stages",
          "[e2e][ceph][osd][tier1]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  const auto sockets = host_osd_sockets(cluster);
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);  // off again when closed
  REQUIRE(stats_fd >= 0);

  Daemon daemon(test_dir(cluster.dir), osd_only_config(", slow_op_threshold: 1s, detail: never"));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(wait_for_probes(cluster, daemon, kTier1Probes));
  {
    const auto m = daemon.scrape();
    for (const auto& o : cluster.osds) {
      INFO(osd_name(o.id));
      // exactly the two tier-1 probes are attached in each OSD
      CHECK(m.sum("cephscope_probe_attached",
                  {{"collector", "osd"}, {"target", osd_name(o.id)}, {"fsid", cluster.fsid}}) == 2);
      CHECK(m.sum("cephscope_osd_stage_available",
                  osd_labels(cluster, o.id,
                             {{"stage", "bluestore_prepare"}, {"reason", "disabled"}})) == 0);
    }
  }
  rados_cleanup(cluster);
  settle();

  auto runs = [](const Metrics& m, const char* program) {
    return m.sum("cephscope_bpf_program_runs_total", {{"collector", "osd"}, {"program", program}});
  };
  // Every OSD op of the host: the probes are in every ceph-osd, another cluster's included.
  auto host_ops = [](const Metrics& m) { return m.sum("cephscope_osd_op_seconds_count", {}); };
  auto host_subops = [](const Metrics& m) {
    return m.sum("cephscope_osd_subop_seconds_count", {});
  };
  auto perf0 = snapshot_host(sockets);
  auto m0 = daemon.scrape();
  auto v0 = views(cluster, m0);
  const auto w = bench(cluster, BenchMode::kWrite, 6);
  settle();
  auto perf1 = snapshot_host(sockets);
  auto m1 = daemon.scrape();
  auto v1 = views(cluster, m1);
  std::printf("tier 1, 4 KiB writes:\n");
  const double writes = check_ops(cluster, "write", v0, v1, delta(perf0, perf1));
  CHECK(within(writes, static_cast<double>(w.total_ops + kBenchMetadataOps), 0.005));
  const double op_hits = runs(m1, "osd_op_done") - runs(m0, "osd_op_done");
  const double subop_hits = runs(m1, "osd_subop_done") - runs(m0, "osd_subop_done");
  const double ops = host_ops(m1) - host_ops(m0);
  const double subops = host_subops(m1) - host_subops(m0);
  std::printf("  uprobe hits: osd_op_done %.0f for %.0f ops, osd_subop_done %.0f for %.0f subops\n",
              op_hits, ops, subop_hits, subops);
  CHECK(ops > 0);
  CHECK(op_hits == ops);
  CHECK(subop_hits == subops);
  CHECK(runs(m1, "osd_txn_queued") == 0);
  // execute (to the sub-ops' event), replication and commit for every write of the size-3 pool
  check_stages(cluster, "write", stages({kReadStages, {"replication", "commit"}}), v0, v1);
  for (const auto& o : cluster.osds) {
    INFO(osd_name(o.id));
    for (const auto& st : kStoreStages) {
      CHECK(v1.at(o.id).stage.at("write").at(st).count == 0);
    }
  }

  // A replica paused for 2 s: its primaries' slow writes are under replication.
  v0 = views(cluster, daemon.scrape());
  const int victim = pause_replica_during_bench(cluster, 2s, 2s, 6);
  settle();
  v1 = views(cluster, daemon.scrape());
  double replication = 0;
  for (const auto& o : cluster.osds) {
    if (o.id != victim) {
      replication += v1.at(o.id).slow.at("replication") - v0.at(o.id).slow.at("replication");
    }
  }
  std::printf("  slow writes under replication while osd.%d was paused: %.0f\n", victim,
              replication);
  CHECK(replication > 0);
  check_slow_records(cluster, daemon, victim);
  rados_cleanup(cluster);
  close(stats_fd);
  const auto rc = daemon.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

namespace {

// POST /debug/osd-detail for one OSD of the cluster: the HTTP status.
int request_detail(const Daemon& daemon, const ClusterInfo& cluster, int id) {
  std::string code;
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port()) +
                          "/debug/osd-detail?ceph_daemon=" + osd_name(id) + "&fsid=" + cluster.fsid;
  run_command("curl -s -o /dev/null -w '%{http_code}' -X POST '" + url + "'", &code);
  return code.empty() ? 0 : std::stoi(code);
}

// Polls until OSD ID's tier 2 is attached (ON) or detached; false after 20 s.
bool wait_detail(const ClusterInfo& cluster, Daemon& daemon, int id, bool on) {
  for (int i = 0; i < 100; ++i) {
    const auto m = daemon.scrape();
    const bool active =
        m.sum("cephscope_osd_detail_active", osd_labels(cluster, id)) == 1 &&
        m.sum("cephscope_probe_attached", {{"collector", "osd"},
                                           {"target", osd_name(id)},
                                           {"fsid", cluster.fsid},
                                           {"probe", "BlueStore::queue_transactions"},
                                           {"reason", "ok"}}) == 1;
    const bool resting =
        m.sum("cephscope_osd_detail_active", osd_labels(cluster, id)) == 0 &&
        !m.find("cephscope_probe_attached", {{"collector", "osd"},
                                             {"target", osd_name(id)},
                                             {"fsid", cluster.fsid},
                                             {"probe", "BlueStore::queue_transactions"},
                                             {"reason", "disabled"}})
             .empty();
    if (on ? active : resting) {
      return true;
    }
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

// BlueStore kv commits counted on OSD ID: client writes as primary and replicated writes.
double store_samples(const ClusterInfo& cluster, const Metrics& m, int id) {
  return m.sum("cephscope_osd_op_stage_seconds_count",
               osd_labels(cluster, id, {{"stage", "bluestore_kv_commit"}})) +
         m.sum("cephscope_osd_subop_stage_seconds_count",
               osd_labels(cluster, id, {{"stage", "bluestore_kv_commit"}}));
}

}  // namespace

// detail: auto: tier 2 runs on an OSD only in windows, opened by an operator's request (one
// at a time) and by rising slow ops, closed when they have run their time.
TEST_CASE("detail: auto attaches tier 2 in bounded windows, on request and on slow ops",
          "[e2e][ceph][osd][detail]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  Daemon daemon(test_dir(cluster.dir),
                osd_only_config(", slow_op_threshold: 1s, detail: auto, detail_window: 8s, "
                                "detail_min_interval: 10m"));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(wait_for_probes(cluster, daemon, kTier1Probes));
  const int first = cluster.osds.front().id;
  const int other = cluster.osds.at(1).id;
  for (const auto& o : cluster.osds) {
    CHECK(wait_detail(cluster, daemon, o.id, false));
  }
  rados_cleanup(cluster);

  // 1. a request: osd.first gets tier 2 for 8 s, the others do not
  CHECK(request_detail(daemon, cluster, first) == 200);
  REQUIRE(wait_detail(cluster, daemon, first, true));
  CHECK(request_detail(daemon, cluster, first) == 409);  // one window at a time
  auto m0 = daemon.scrape();
  bench(cluster, BenchMode::kWrite, 3);
  auto m1 = daemon.scrape();
  const double in_window = store_samples(cluster, m1, first) - store_samples(cluster, m0, first);
  std::printf("  in osd.%d's window: %.0f BlueStore samples; osd.%d (no window): %.0f\n", first,
              in_window, other, store_samples(cluster, m1, other));
  CHECK(in_window > 0);
  CHECK(store_samples(cluster, m1, other) == 0);
  CHECK(m1.sum("cephscope_osd_detail_windows_total",
               osd_labels(cluster, first, {{"trigger", "request"}})) == 1);
  REQUIRE(wait_detail(cluster, daemon, first, false));  // the window ran its 8 s
  m0 = daemon.scrape();
  bench(cluster, BenchMode::kWrite, 2);
  settle();
  m1 = daemon.scrape();
  CHECK(store_samples(cluster, m1, first) == store_samples(cluster, m0, first));
  rados_cleanup(cluster);

  // 2. rising slow ops: a replica paused for 3 s makes the primaries' writes slow
  const int victim = pause_replica_during_bench(cluster, 1s, 3s, 8);
  double slow_windows = 0;
  for (int i = 0; i < 50 && slow_windows == 0; ++i) {  // triggers are read every 5 s
    const auto m = daemon.scrape();
    slow_windows = m.sum("cephscope_osd_detail_windows_total",
                         {{"fsid", cluster.fsid}, {"trigger", "slow_ops"}});
    std::this_thread::sleep_for(200ms);
  }
  std::printf("  windows opened by slow ops after osd.%d's pause: %.0f\n", victim, slow_windows);
  CHECK(slow_windows >= 1);
  CHECK(daemon.log_has("detail window opened (slow_ops)", 1s));
  rados_cleanup(cluster);
  const auto rc = daemon.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
}

// An erasure-coded pool (k=2, m=1 over the 3 OSDs): the client write's primary runs the same
// log_op_stats, so EC writes are counted per op like any other, with the stages that apply:
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
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(wait_for_probes(cluster, daemon));
  rados_cleanup(cluster);
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
