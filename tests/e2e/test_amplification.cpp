// Write amplification's layers against Ceph's own figures: 4 KiB and 64 KiB rados bench
// writes to the test cluster's size-3 pool. The client layer (the bench's own ops), the osd_op
// layer (each primary's client writes) and the replica layer (the replicated writes each
// replica received: payload and transaction) move by exactly what the OSDs' op_in_bytes and
// subop_w_in_bytes counters say; the block layer's bytes per client byte are printed (the
// table of docs/metrics.md).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
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
};

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
  return l;
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

}  // namespace

TEST_CASE("the osd_op and replica layers equal Ceph's op_in_bytes and subop_w_in_bytes",
          "[e2e][ceph][amplification]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  Daemon daemon(test_dir(cluster.dir),
                "discovery: {scan_interval: 1s}\n"
                "collectors: {syscall: {enabled: false}, vfs: {enabled: false}}\n");
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  REQUIRE(poll_until([&] { return probes_ready(daemon.scrape(), cluster); }, 60s).has_value());
  rados_cleanup(cluster);
  CleanupGuard cleanup{cluster};

  std::printf(
      "| writes | ops (op_w) | osd_op = op_in_bytes | replica = subop_w_in_bytes | "
      "block bytes | block per client byte | block per replicated byte |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const std::uint64_t size : {std::uint64_t{4096}, std::uint64_t{65536}}) {
    const auto ceph0 = snapshot_osds(cluster);
    const auto ours0 = layers(daemon.scrape(), cluster);
    BenchOptions opt;
    opt.seconds = 5;
    opt.block_size = size;
    opt.threads = 16;
    opt.no_cleanup = true;
    const BenchSummary bench = run_rados_bench(cluster, opt);
    // The client is gone: every op it made was answered, every replica has committed. The
    // block layer's last writes (BlueStore's deferred and RocksDB's flushes) may still come:
    // they are compared as what the run caused, not to the byte.
    std::this_thread::sleep_for(2s);
    const auto ceph = sum(delta(ceph0, snapshot_osds(cluster)));
    const auto ours1 = layers(daemon.scrape(), cluster);
    const double client = ours1.client - ours0.client;
    const double osd_op = ours1.osd_op - ours0.osd_op;
    const double replica = ours1.replica - ours0.replica;
    const double block = ours1.block - ours0.block;
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
    CHECK(ceph.subop_w == 2 * ceph.op_w);  // size 3: two replicas per write
    CHECK(block > osd_op);
    std::printf("| %llu KiB | %llu | %.0f | %.0f | %.0f | %.2f | %.2f |\n",
                static_cast<unsigned long long>(size / 1024),
                static_cast<unsigned long long>(ceph.op_w), osd_op, replica, block, block / osd_op,
                block / (osd_op + replica));
    rados_cleanup(cluster);
  }
  std::fflush(stdout);
}
