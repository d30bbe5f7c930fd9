// e2e (root, live test cluster): rados bench's own figures against the OSDs' own perf counters.
// No cephscope daemon yet: this proves the test bed and the harness are exact enough to be the
// oracle for the daemon's collectors.
//
// Why the counts are exact: the pool is replicated, size 3, over exactly 3 OSDs, so each PG
// lives on all three; every client write is one op_w on its PG's primary and one subop_w on
// each of the two others. rados bench adds one op of its own per run (kBenchMetadataOps: it
// writes benchmark_last_metadata after a write run, reads it before a seq/rand run). Nothing
// else writes to client-visible pools of an idle test cluster; the tests run serially.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include "ceph_harness.h"

using namespace cephscope::test;

namespace {

int bench_seconds() {
  const char* s = std::getenv("CEPHSCOPE_BENCH_SECONDS");
  int v = s ? std::atoi(s) : 0;
  return v > 0 ? v : 5;
}

void print(const char* what, const BenchSummary& s, const OsdCounters& t, bool write) {
  const auto& lat = write ? t.op_w_latency : t.op_r_latency;
  std::printf(
      "%-10s rados: %8llu ops %9.0f IOPS  avg %7.3f ms  %8.2f MB/s | OSDs: %s %llu avg %7.3f ms\n",
      what, static_cast<unsigned long long>(s.total_ops), s.avg_iops, s.avg_latency_s * 1e3,
      s.bandwidth_mb_s, write ? "op_w" : "op_r",
      static_cast<unsigned long long>(write ? t.op_w : t.op_r), lat.average() * 1e3);
}

void writes_then_reads_match_counters(std::uint64_t block_size) {
  auto cluster = cluster_from_env();
  REQUIRE(cluster.has_value());
  REQUIRE(cluster->osds.size() == 3);
  REQUIRE(cluster->pool_size == 3);
  rados_cleanup(*cluster);  // start from an empty pool
  CleanupGuard guard{*cluster};

  BenchOptions opt;
  opt.seconds = bench_seconds();
  opt.block_size = block_size;
  opt.threads = 16;

  auto s0 = snapshot_osds(*cluster);
  opt.mode = BenchMode::kWrite;
  auto write = run_rados_bench(*cluster, opt);
  auto s1 = snapshot_osds(*cluster);
  opt.mode = BenchMode::kSeq;
  auto seq = run_rados_bench(*cluster, opt);
  auto s2 = snapshot_osds(*cluster);
  opt.mode = BenchMode::kRand;
  auto rand = run_rados_bench(*cluster, opt);
  auto s3 = snapshot_osds(*cluster);

  auto dw = delta(s0, s1);
  auto tw = sum(dw);
  auto tseq = sum(delta(s1, s2));
  auto trand = sum(delta(s2, s3));
  std::printf("block size %llu, 16 threads, %d s per run\n",
              static_cast<unsigned long long>(block_size), opt.seconds);
  print("write", write, tw, true);
  print("seq read", seq, tseq, false);
  print("rand read", rand, trand, false);

  REQUIRE(write.total_ops > 0);
  CHECK(write.op_size == block_size);
  // writes (plain blocks, not SECTIONs: Catch would rerun the benches once per section)
  {
    // every write once as op_w on its primary ...
    CHECK(tw.op_w == write.total_ops + kBenchMetadataOps);
    CHECK(tw.op_r == 0);
    // ... and as subop_w on the other two: each OSD is a replica of every write whose primary
    // is another OSD (pool size 3 on 3 OSDs)
    CHECK(tw.subop_w == 2 * tw.op_w);
    for (const auto& [id, c] : dw) {
      INFO("osd." << id << ": op_w " << c.op_w << ", subop_w " << c.subop_w);
      CHECK(c.op_w > 0);  // 32 PGs spread primaries over all OSDs
      CHECK(c.subop_w == tw.op_w - c.op_w);
      CHECK(c.op_w_latency.avgcount == c.op_w);
      CHECK(c.subop_w_latency.avgcount == c.subop_w);
      CHECK(c.subop_w_in_bytes >= c.subop_w * block_size);  // payload plus transaction metadata
    }
    CHECK(tw.op_in_bytes >= write.total_ops * block_size);
  }
  // reads
  {
    // seq reads each written object once, and stops early when they run out
    CHECK(seq.total_ops <= write.total_ops);
    if (seq.total_time_s < opt.seconds) {
      CHECK(seq.total_ops == write.total_ops);
    }
    CHECK(tseq.op_r == seq.total_ops + kBenchMetadataOps);
    CHECK(tseq.op_w == 0);
    CHECK(tseq.subop_w == 0);  // the primary serves reads alone
    CHECK(tseq.op_r_latency.avgcount == tseq.op_r);
    CHECK(trand.op_r == rand.total_ops + kBenchMetadataOps);
    CHECK(trand.op_w == 0);
    CHECK(tseq.op_out_bytes >= seq.total_ops * block_size);
  }
}

}  // namespace

TEST_CASE("4 KiB rados bench: op_w, subop_w and op_r deltas match rados bench", "[e2e][ceph]") {
  writes_then_reads_match_counters(4096);
}

TEST_CASE("64 KiB rados bench: op_w, subop_w and op_r deltas match rados bench", "[e2e][ceph]") {
  writes_then_reads_match_counters(65536);
}

TEST_CASE("cleanup removes exactly the objects a write run made", "[e2e][ceph]") {
  auto cluster = cluster_from_env();
  REQUIRE(cluster.has_value());
  rados_cleanup(*cluster);
  BenchOptions opt;
  opt.seconds = 2;
  auto write = run_rados_bench(*cluster, opt);
  CHECK(rados_cleanup(*cluster) == write.total_ops);  // one object per 4 KiB write
  CHECK(rados_cleanup(*cluster) == 0);
}

TEST_CASE("the admin socket client reads what ceph --admin-daemon reads", "[e2e][ceph]") {
  auto cluster = cluster_from_env();
  REQUIRE(cluster.has_value());
  for (const auto& osd : cluster->osds) {
    INFO(osd.name);
    auto ours = parse_osd_perf_dump(admin_socket_command(osd.asok, R"({"prefix": "perf dump"})"));
    auto r = run_command({"ceph", "--admin-daemon", osd.asok, "perf", "dump"});
    REQUIRE(r.ok());
    auto theirs = parse_osd_perf_dump(r.out);
    // an idle cluster: client op counters do not move between the two reads
    CHECK(ours.op_w == theirs.op_w);
    CHECK(ours.op_r == theirs.op_r);
    CHECK(ours.subop_w == theirs.subop_w);
    CHECK(ours.op_w_latency.avgcount == theirs.op_w_latency.avgcount);
  }
  CHECK(cluster_rss_bytes(*cluster) > 0);
}
