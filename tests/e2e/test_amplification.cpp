// Write amplification's layers against Ceph's own figures: 4 KiB and 64 KiB rados bench
// writes to the test cluster's size-3 pool. The client layer (the bench's own ops), the osd_op
// layer (each primary's client writes) and the replica layer (the replicated writes each
// replica received: payload and transaction) move by exactly what the OSDs' op_in_bytes and
// subop_w_in_bytes counters say; the bluestore layer's kinds agree with BlueStore's and BlueFS's
// own byte counters within 2%; the bluestore and block layers' bytes per client byte are
// printed (the tables of docs/metrics.md).
//
// With CEPHSCOPE_AMPLIFICATION_POOL=ec the writes go to a 2+1 erasure-coded pool made for the
// run (failure domain osd, overwrites allowed): Ceph counts no replica sub-op for its shard
// writes and neither does the replica layer (both stay 0); the shards reach BlueStore, whose
// layer is checked as above. The cluster's OSD settings (ssd, hdd) and release come from the
// cluster under test (tests/e2e/CMakeLists.txt runs this on several).
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "ceph_harness.h"
#include "osd_control.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"

using namespace cephscope::test;
using namespace std::chrono_literals;

namespace {

struct Layers {
  double client = 0;  // the bench process's payload
  double osd_op = 0;  // every OSD of the cluster, write direction
  double replica = 0;
  double block = 0;
  std::array<double, 5> store{};  // the bluestore layer, by kind (data deferred wal bluefs other)
  double store_writes = 0;        // its device writes, every kind
  [[nodiscard]] double store_total() const {
    return store[0] + store[1] + store[2] + store[3] + store[4];
  }
};

constexpr std::array<const char*, 5> kKinds = {"data", "deferred", "wal", "bluefs", "other"};
constexpr double kTolerance = 0.02;

Layers layers(const Metrics& m, const ClusterInfo& cluster) {
  Layers l;
  const auto osd_layer = [&](const char* layer) {
    return m.sum("cephscope_layer_bytes_total",
                 {{"fsid", cluster.fsid}, {"layer", layer}, {"direction", "write"}});
  };
  l.client = m.sum("cephscope_layer_bytes_total",
                   {{"process", "rados"}, {"layer", "client"}, {"direction", "write"}});
  l.osd_op = osd_layer("osd_op");
  l.replica = osd_layer("replica");
  l.block = osd_layer("block");
  for (std::size_t k = 0; k < kKinds.size(); ++k) {
    l.store_writes +=
        m.sum("cephscope_bluestore_writes_total", {{"fsid", cluster.fsid}, {"kind", kKinds[k]}});
    l.store[k] = m.sum("cephscope_layer_bytes_total", {{"fsid", cluster.fsid},
                                                       {"layer", "bluestore"},
                                                       {"direction", "write"},
                                                       {"kind", kKinds[k]}});
  }
  return l;
}

// What BlueStore's and BlueFS's own counters say each kind wrote (docs/collectors/osd.md).
std::array<double, 5> ceph_store(const OsdCounters& c) {
  const auto& b = c.store_bytes;
  const auto u = [&](StoreCounter i) { return static_cast<double>(b.at(i)); };
  return {u(kWriteBigBytes) + u(kWriteSmallBytes) + u(kWritePadBytes) - u(kWriteDeferredBytes),
          u(kDeferredWriteBytes), u(kBlueFsWal), u(kBlueFsSst) + u(kBlueFsLogged), 0};
}

bool within(double ours, double ceph, double tolerance) {
  return std::abs(ours - ceph) <= tolerance * ceph;
}

// Every OSD of the cluster measures the bluestore layer.
bool store_layer_ready(const Metrics& m, const ClusterInfo& cluster) {
  for (const auto& osd : cluster.osds) {
    const auto up =
        m.find("cephscope_layer_available", {{"layer", "bluestore"},
                                             {"ceph_daemon", "osd." + std::to_string(osd.id)},
                                             {"fsid", cluster.fsid}});
    if (up.size() != 1 || up.front().value != 1) {
      return false;
    }
  }
  return true;
}

bool probes_ready(const Metrics& m, const ClusterInfo& cluster) {
  for (const auto& osd : cluster.osds) {
    const auto attached =
        m.find("cephscope_probe_attached", {{"collector", "osd"},
                                            {"target", "osd." + std::to_string(osd.id)},
                                            {"fsid", cluster.fsid}});
    if (attached.empty()) {
      return false;
    }
  }
  return true;
}

// The layer series of one OSD's target in the cluster that a recording rule reads, by their
// labels in PromQL's notation.
std::map<std::string, double> rule_inputs(const Metrics& m, const std::string& fsid) {
  std::map<std::string, double> out;
  for (const auto& s : m.find("cephscope_layer_bytes_total", {{"fsid", fsid}})) {
    std::string series = s.name + R"({job="cephscope",instance="node")";
    for (const auto& [k, v] : s.labels) {
      // Ceph's names and fsids need no escaping
      series.append(",").append(k).append("=\"").append(v).append("\"");
    }
    out[series + "}"] = s.value;
  }
  return out;
}

// cephscope:host_bluestore_amplification:ratio5m of dashboards/rules/cephscope-rules.yml, as
// promtool evaluates it on the run's series (before and after, as two samples 5 minutes apart:
// rate() over [5m] at the second is their difference over 300 s, with no extrapolation), is
// within 2% of CEPH_RATIO. nullopt when promtool is not installed; LOG gets its output.
std::optional<bool> rule_agrees(const Metrics& before, const Metrics& after,
                                const std::string& fsid, double ceph_ratio, const std::string& dir,
                                std::string& log) {
  const std::string promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) {
    return std::nullopt;
  }
  const auto b = rule_inputs(before, fsid);
  std::string yml = "rule_files: [" + std::string(CEPHSCOPE_SOURCE_DIR) +
                    "/dashboards/rules/cephscope-rules.yml]\nevaluation_interval: 1m\n"
                    "tests:\n  - interval: 5m\n    input_series:\n";
  for (const auto& [series, value] : rule_inputs(after, fsid)) {
    const auto was = b.find(series);
    char values[96];
    std::snprintf(values, sizeof values, "%.0f %.0f", was == b.end() ? 0.0 : was->second, value);
    yml += "      - series: '" + series + "'\n        values: '" + values + "'\n";
  }
  char expr[160];
  std::snprintf(expr, sizeof expr,
                "abs(cephscope:host_bluestore_amplification:ratio5m / %.9g - 1) < bool %g",
                ceph_ratio, kTolerance);
  yml += std::string("    promql_expr_test:\n      - expr: '") + expr +
         "'\n        eval_time: 5m\n        exp_samples:\n"
         "          - labels: '{instance=\"node\", job=\"cephscope\"}'\n            value: 1\n";
  const std::string file = dir + "/amplification.test.yml";
  std::ofstream(file) << yml;
  const auto r = run_command({promtool, "test", "rules", file}, 60s);
  log = r.out + r.err;
  return r.ok();
}

// The pool the benches write to: the cluster's replicated pool, or a 2+1 erasure-coded one
// made here and removed when this goes out of scope.
struct BenchPool {
  ClusterInfo cluster;  // the cluster under test, its `pool` the one written
  bool erasure = false;
  double copies = 0;  // bytes stored per client byte, at least: the size, or (k+m)/k

  BenchPool(const ClusterInfo& c, bool ec) : cluster(c), erasure(ec) {
    copies = static_cast<double>(c.pool_size);
    if (!erasure) {
      return;
    }
    const std::string name = "cephscope-ec21";
    cluster.pool = name;
    copies = 3.0 / 2.0;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"osd", "erasure-code-profile", "set", name, "k=2", "m=1",
                                   "crush-failure-domain=osd", "--force"},
          {"osd", "pool", "create", name, "8", "8", "erasure", name},
          {"osd", "pool", "set", name, "allow_ec_overwrites", "true"},
          {"osd", "pool", "application", "enable", name, "rados"}}) {
      const auto r = run_command(tool_argv(cluster, "ceph", args), 120s);
      INFO(describe(args) << ": " << r.out << r.err);
      REQUIRE(r.ok());
    }
    // its placement groups peered before the first write is timed
    const auto clean = poll_until(
        [&] {
          const auto r = run_command(
              tool_argv(cluster, "ceph", {"pg", "ls-by-pool", name, "-f", "json"}), 60s);
          if (!r.ok()) {
            return false;
          }
          const auto j = nlohmann::json::parse(r.out, nullptr, false);
          const auto& pgs = j.is_object() ? j.value("pg_stats", nlohmann::json::array()) : j;
          if (!pgs.is_array() || pgs.empty()) {
            return false;
          }
          for (const auto& pg : pgs) {
            if (pg.value("state", "") != "active+clean") {
              return false;
            }
          }
          return true;
        },
        120s);
    REQUIRE(clean.has_value());
  }
  ~BenchPool() {
    if (erasure) {
      const auto r = run_command(tool_argv(cluster, "ceph",
                                           {"osd", "pool", "rm", cluster.pool, cluster.pool,
                                            "--yes-i-really-really-mean-it"}),
                                 120s);
      if (!r.ok()) {
        std::fprintf(stderr, "removing pool %s failed: %s%s\n", cluster.pool.c_str(), r.out.c_str(),
                     r.err.c_str());
      }
    }
  }
  BenchPool(const BenchPool&) = delete;
  BenchPool& operator=(const BenchPool&) = delete;
};

// What BlueStore was told the device is: "ssd", "hdd" or "default" (its rotational flag).
std::string store_settings(const ClusterInfo& cluster) {
  const auto reply = admin_socket_command(
      cluster.osds.front().asok,
      R"({"prefix": "config get", "var": "bluestore_debug_enforce_settings"})");
  const auto j = nlohmann::json::parse(reply, nullptr, false);
  return j.is_object() ? j.value("bluestore_debug_enforce_settings", "?") : "?";
}

}  // namespace

TEST_CASE(
    "the osd_op and replica layers equal Ceph's op_in_bytes and subop_w_in_bytes, the "
    "bluestore layer BlueStore's and BlueFS's byte counters",
    "[e2e][ceph][amplification]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir,
                "discovery: {scan_interval: 1s}\n"
                "collectors: {syscall: {enabled: false}, vfs: {enabled: false}}\n");
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(poll_until([&] { return probes_ready(daemon.scrape(), cluster); }, 60s).has_value());
  REQUIRE(store_layer_ready(daemon.scrape(), cluster));
  const char* pool_kind = std::getenv("CEPHSCOPE_AMPLIFICATION_POOL");
  const bool erasure = pool_kind != nullptr && std::string(pool_kind) == "ec";
  REQUIRE((pool_kind == nullptr || erasure || std::string(pool_kind) == "replicated"));
  const BenchPool pool(cluster, erasure);
  rados_cleanup(pool.cluster);
  CleanupGuard cleanup{pool.cluster};

  std::printf("Ceph %s, BlueStore settings %s, pool %s (%s)\n", cluster.release.c_str(),
              store_settings(cluster).c_str(), pool.cluster.pool.c_str(),
              erasure ? "erasure-coded k=2 m=1, failure domain osd"
                      : ("replicated, size " + std::to_string(cluster.pool_size)).c_str());
  std::printf(
      "| writes | ops (op_w) | osd_op = op_in_bytes | replica = subop_w_in_bytes | "
      "block bytes | block per client byte | block per replicated byte |\n"
      "|---|---|---|---|---|---|---|\n");
  std::string store_table =
      "| writes | bluestore data (Ceph) | deferred (Ceph) | wal (Ceph) | bluefs (Ceph) | "
      "bluestore bytes | per client byte | per stored byte (Ceph) | block per client byte | "
      "device writes per client write |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const std::uint64_t size : {std::uint64_t{4096}, std::uint64_t{65536}}) {
    const auto ceph0 = snapshot_osds(cluster);
    const Metrics m0 = daemon.scrape();
    const auto ours0 = layers(m0, cluster);
    BenchOptions opt;
    opt.seconds = 5;
    opt.block_size = size;
    opt.threads = 16;
    opt.no_cleanup = true;
    const BenchSummary bench = run_rados_bench(pool.cluster, opt);
    // The client is gone: every op it made was answered, every replica has committed. The
    // block layer's last writes (BlueStore's deferred and RocksDB's flushes) may still come:
    // they are compared as what the run caused, not to the byte.
    std::this_thread::sleep_for(2s);
    const auto ceph = sum(delta(ceph0, snapshot_osds(cluster)));
    const Metrics m1 = daemon.scrape();
    const auto ours1 = layers(m1, cluster);
    const double client = ours1.client - ours0.client;
    const double osd_op = ours1.osd_op - ours0.osd_op;
    const double replica = ours1.replica - ours0.replica;
    const double block = ours1.block - ours0.block;
    std::array<double, 5> store{};
    for (std::size_t k = 0; k < store.size(); ++k) {
      store[k] = ours1.store[k] - ours0.store[k];
    }
    const double store_total = ours1.store_total() - ours0.store_total();
    const auto expected = ceph_store(ceph);
    const double expected_total = expected[0] + expected[1] + expected[2] + expected[3];
    INFO(size << " B writes: " << bench.total_ops << " ops; client " << client << ", osd_op "
              << osd_op << " (Ceph " << ceph.op_in_bytes << "), replica " << replica << " (Ceph "
              << ceph.subop_w_in_bytes << "), block " << block);
    // Every write of the run, and the metadata object rados bench stores at its end.
    CHECK(ceph.op_w == bench.total_ops + kBenchMetadataOps);
    CHECK(ceph.op_in_bytes >= bench.total_ops * size);
    CHECK(osd_op == static_cast<double>(ceph.op_in_bytes));
    CHECK(replica == static_cast<double>(ceph.subop_w_in_bytes));
    // The client layer too: the probes sit on the host's librados file, so the bench is
    // counted from its first op although discovery finds it a moment after its exec.
    CHECK(client == static_cast<double>(ceph.op_in_bytes));
    if (erasure) {
      // EC shard writes are no replica sub-ops: Ceph counts none, nor does the replica layer
      CHECK(ceph.subop_w == 0);
      CHECK(replica == 0);
    } else {
      CHECK(ceph.subop_w == static_cast<std::uint64_t>(cluster.pool_size - 1) * ceph.op_w);
    }
    CHECK(block > osd_op);
    // The bluestore layer, kind by kind, against BlueStore's and BlueFS's own counters.
    for (std::size_t k = 0; k < 3; ++k) {  // data, deferred, wal
      INFO(kKinds[k] << ": ours " << store[k] << ", Ceph's " << expected[k]);
      CHECK(within(store[k], expected[k], kTolerance));
    }
    // BlueFS's log and SST files: a log compaction rewrites the log, which no counter counts
    // (about 130 KiB per OSD and compaction here): within 2%, or above by at most 1 MiB per
    // compaction.
    const auto compactions = ceph.store_bytes.at(kBlueFsLogCompactions);
    INFO("bluefs: ours " << store[3] << ", Ceph's " << expected[3] << ", " << compactions
                         << " log compactions");
    CHECK((within(store[3], expected[3], kTolerance) ||
           (compactions > 0 && store[3] >= expected[3] &&
            store[3] - expected[3] <= static_cast<double>(compactions) * 1048576.0)));
    CHECK(store[4] == 0);
    INFO("bluestore: ours " << store_total << ", Ceph's " << expected_total);
    CHECK(within(store_total, expected_total, kTolerance));
    // Each copy (each shard) of every write reaches the device as data or, deferred, first in
    // RocksDB's WAL (applied in place later, when its batch is submitted).
    CHECK(store[0] + store[2] >= pool.copies * static_cast<double>(bench.total_ops * size));
    // The recording rule on these series against Ceph's own ratio.
    const double ceph_ratio =
        expected_total / static_cast<double>(ceph.op_in_bytes + ceph.subop_w_in_bytes);
    std::string promtool_log;
    const auto agrees = rule_agrees(m0, m1, cluster.fsid, ceph_ratio, dir, promtool_log);
    if (!agrees) {
      WARN("promtool not installed: the recording rule was not evaluated");
    } else {
      INFO("Ceph's ratio " << ceph_ratio << "; promtool: " << promtool_log);
      CHECK(*agrees);
    }
    std::printf("| %llu KiB | %llu | %.0f | %.0f | %.0f | %.2f | %.2f |\n",
                static_cast<unsigned long long>(size / 1024),
                static_cast<unsigned long long>(ceph.op_w), osd_op, replica, block, block / osd_op,
                block / (osd_op + replica));
    char row[512];
    std::snprintf(
        row, sizeof row,
        "| %llu KiB | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.0f | %.2f "
        "| %.3f (%.3f) | %.2f | %.2f |\n",
        static_cast<unsigned long long>(size / 1024), store[0], expected[0], store[1], expected[1],
        store[2], expected[2], store[3], expected[3], store_total, store_total / osd_op,
        store_total / (osd_op + replica), ceph_ratio, block / osd_op,
        (ours1.store_writes - ours0.store_writes) / static_cast<double>(ceph.op_w));
    store_table += row;
    rados_cleanup(pool.cluster);
  }
  std::fputs(store_table.c_str(), stdout);
  std::fflush(stdout);
}
