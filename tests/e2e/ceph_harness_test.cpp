// Unit tests (no root, no cluster) of the Ceph harness: the parsers run on real outputs captured
// from a 3-OSD test cluster by tests/ceph/capture-fixtures.sh (tests/fixtures/ceph/), and the
// fixtures themselves must satisfy the relations the e2e tests assert on a live cluster.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "ceph_harness.h"

using namespace cephscope::test;
using Catch::Matchers::Contains;

namespace {

std::string fixture(const std::string& name) {
  std::string path = std::string(CEPHSCOPE_CEPH_FIXTURES) + "/" + name;
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("missing fixture " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// perf-dump-osd.N-P.json: P = 0 before the 4 KiB write, 1 after it, 2 after seq, 3 after rand
OsdSnapshot snapshot(int phase) {
  OsdSnapshot s;
  for (int id = 0; id < 3; ++id) {
    s[id] = parse_osd_perf_dump(
        fixture("perf-dump-osd." + std::to_string(id) + "-" + std::to_string(phase) + ".json"));
  }
  return s;
}

}  // namespace

TEST_CASE("rados bench write summary", "[ceph][rados_bench]") {
  auto s = parse_rados_bench(fixture("rados-bench-write-4k.txt"));
  CHECK(s.mode == BenchMode::kWrite);
  CHECK(s.total_time_s == Approx(5.00794));
  CHECK(s.total_ops == 3236);
  CHECK(s.op_size == 4096);
  CHECK(s.object_size == 4096);
  CHECK(s.bandwidth_mb_s == Approx(2.52412));
  CHECK(s.avg_iops == Approx(646));
  CHECK(s.stddev_iops == Approx(68.2693));
  CHECK(s.max_iops == Approx(705));
  CHECK(s.min_iops == Approx(543));
  CHECK(s.avg_latency_s == Approx(0.0247357));
  REQUIRE(s.stddev_latency_s.has_value());
  CHECK(*s.stddev_latency_s == Approx(0.0143425));
  CHECK(s.max_latency_s == Approx(0.136472));
  CHECK(s.min_latency_s == Approx(0.00609612));

  auto big = parse_rados_bench(fixture("rados-bench-write-64k.txt"));
  CHECK(big.total_ops == 4219);
  CHECK(big.op_size == 65536);
  CHECK(big.bandwidth_mb_s == Approx(52.5479));
  CHECK(big.avg_latency_s == Approx(0.0189747));
}

TEST_CASE("rados bench read summaries", "[ceph][rados_bench]") {
  auto seq = parse_rados_bench(fixture("rados-bench-seq-4k.txt"));
  CHECK(seq.mode == BenchMode::kSeq);  // the text does not tell seq from rand
  CHECK(seq.total_time_s == Approx(0.42585));
  CHECK(seq.total_ops == 3236);
  CHECK(seq.op_size == 4096);
  CHECK(seq.avg_iops == Approx(7598));
  CHECK(seq.stddev_iops == 0);
  CHECK(seq.avg_latency_s == Approx(0.00207462));
  CHECK_FALSE(seq.stddev_latency_s.has_value());  // reads print no latency stddev
  CHECK(seq.max_latency_s == Approx(0.012714));
  CHECK(seq.min_latency_s == Approx(0.000204175));

  auto rand = parse_rados_bench(fixture("rados-bench-rand-4k.txt"));
  CHECK(rand.total_ops == 69222);
  CHECK(rand.avg_iops == Approx(13842));
  CHECK(rand.bandwidth_mb_s == Approx(54.0717));
  CHECK(rand.min_latency_s == Approx(9.2147e-05));  // exponent notation

  auto seq64 = parse_rados_bench(fixture("rados-bench-seq-64k.txt"));
  CHECK(seq64.total_ops == 4219);  // a seq run reads each object once, then stops early
  CHECK(seq64.op_size == 65536);
  auto rand64 = parse_rados_bench(fixture("rados-bench-rand-64k.txt"));
  CHECK(rand64.total_ops == 33196);
  CHECK(rand64.bandwidth_mb_s == Approx(414.488));
}

TEST_CASE("rados bench failures are reported, not parsed as zero", "[ceph][rados_bench]") {
  auto text = fixture("rados-bench-no-pool.txt");
  CHECK_THROWS_WITH(parse_rados_bench(text), Contains("no summary") && Contains("no-such-pool"));
  CHECK(fixture("rados-bench-no-pool.exit") != "0\n");

  // a summary cut short (rados killed mid-print)
  auto cut = fixture("rados-bench-write-4k.txt");
  cut = cut.substr(0, cut.find("Average IOPS"));
  CHECK_THROWS_WITH(parse_rados_bench(cut), Contains("Average IOPS"));
}

TEST_CASE("rados cleanup count", "[ceph][rados_bench]") {
  CHECK(parse_rados_cleanup(fixture("rados-cleanup-4k.txt")) == 3236);
  CHECK(parse_rados_cleanup(fixture("rados-cleanup-64k.txt")) == 4219);
  CHECK(parse_rados_cleanup(fixture("rados-cleanup-empty.txt")) == 0);  // prints nothing
  CHECK_THROWS(parse_rados_cleanup("error opening pool x: (2) No such file or directory\n"));
}

TEST_CASE("bench argv", "[ceph][rados_bench]") {
  ClusterInfo c;
  c.conf = "/d/ceph.conf";
  c.pool = "bench";
  BenchOptions w;
  w.seconds = 7;
  CHECK(describe(rados_bench_argv(c, w)) ==
        "rados -c /d/ceph.conf -p bench bench 7 write -t 16 -b 4096 --no-cleanup");
  BenchOptions r;
  r.mode = BenchMode::kRand;
  CHECK(describe(rados_bench_argv(c, r)) == "rados -c /d/ceph.conf -p bench bench 5 rand -t 16");
}

TEST_CASE("OSD perf dump", "[ceph][perf]") {
  auto c = parse_osd_perf_dump(fixture("perf-dump-osd.0-1.json"));
  CHECK(c.op_w == 1256);
  CHECK(c.op_r == 0);
  CHECK(c.subop_w == 1983);
  CHECK(c.op_w_latency.avgcount == 1256);
  CHECK(c.op_w_latency.sum == Approx(28.447954194));
  CHECK(c.op_w_latency.average() == Approx(0.022649645));
  CHECK(c.subop_w_latency.avgcount == 1983);
  CHECK(c.subop_w_latency.sum == Approx(27.399957613));
  CHECK(c.op_r_latency.average() == 0);  // no reads yet: no division by zero

  CHECK_THROWS_WITH(parse_osd_perf_dump("{\"mon\": {}}"), Contains("perf dump"));
  CHECK_THROWS(parse_osd_perf_dump("not json"));
}

TEST_CASE("perf counter deltas", "[ceph][perf]") {
  auto before = snapshot(0);
  auto after = snapshot(1);
  auto d = delta(before, after);
  REQUIRE(d.size() == 3);
  CHECK(d[0].op_w == 1256);
  CHECK(d[0].subop_w == 1981);
  CHECK(d[0].op_w_latency.avgcount == d[0].op_w);
  CHECK(d[0].op_w_latency.sum == Approx(after[0].op_w_latency.sum - before[0].op_w_latency.sum));

  CHECK_THROWS_WITH(delta(after, before), Contains("backwards"));
  OsdSnapshot two{{0, before[0]}, {1, before[1]}};
  CHECK_THROWS(delta(two, after));
}

// The relations the e2e test asserts on the live cluster, checked on the captured run.
TEST_CASE("captured counters agree with rados bench", "[ceph][perf][rados_bench]") {
  auto write = parse_rados_bench(fixture("rados-bench-write-4k.txt"));
  auto seq = parse_rados_bench(fixture("rados-bench-seq-4k.txt"));
  auto rand = parse_rados_bench(fixture("rados-bench-rand-4k.txt"));

  SECTION("writes: every client write lands once as op_w, twice as subop_w") {
    auto d = delta(snapshot(0), snapshot(1));
    auto t = sum(d);
    CHECK(t.op_w == write.total_ops + kBenchMetadataOps);
    CHECK(t.op_r == 0);
    CHECK(t.subop_w == 2 * t.op_w);  // pool size 3: one primary, two replicas
    for (const auto& [id, c] : d) {
      INFO("osd." << id);
      CHECK(c.subop_w == t.op_w - c.op_w);  // replica of every write it is not primary of
      CHECK(c.op_w_latency.avgcount == c.op_w);
      CHECK(c.subop_w_latency.avgcount == c.subop_w);
    }
  }
  SECTION("seq reads") {
    auto t = sum(delta(snapshot(1), snapshot(2)));
    CHECK(t.op_r == seq.total_ops + kBenchMetadataOps);
    CHECK(t.op_w == 0);
    CHECK(t.subop_w == 0);  // reads are served by the primary alone
  }
  SECTION("rand reads") {
    auto t = sum(delta(snapshot(2), snapshot(3)));
    CHECK(t.op_r == rand.total_ops + kBenchMetadataOps);
    CHECK(t.op_r_latency.avgcount == t.op_r);
  }
}

TEST_CASE("cluster.json", "[ceph][cluster]") {
  auto c = parse_cluster_info(fixture("cluster.json"));
  CHECK(c.conf == c.dir + "/ceph.conf");
  CHECK(c.pool == "bench");
  CHECK(c.pool_size == 3);
  CHECK(c.mon.name == "mon.a");
  CHECK(c.mon.id == -1);
  REQUIRE(c.osds.size() == 3);
  CHECK(c.osds[2].id == 2);
  CHECK(c.osds[2].name == "osd.2");
  CHECK(c.osds[2].asok == c.dir + "/run/osd.2.asok");
  CHECK(c.osds[2].pid > 0);
  CHECK_THROWS(parse_cluster_info("{}"));
}

TEST_CASE("run_command", "[harness]") {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.ok());
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK_FALSE(r.timed_out);

  auto big = run_command({"sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"});
  CHECK(big.ok());
  CHECK(big.out.size() == 300000);  // both pipes drained: no deadlock on full buffers
  CHECK(big.err.size() == 200000);

  auto slow =
      run_command({"sh", "-c", "sleep 30 & sleep 30; echo never"}, std::chrono::milliseconds(300));
  CHECK(slow.timed_out);
  CHECK(slow.seconds < 10);  // the whole group was killed, the background sleep too
  CHECK(slow.out.empty());

  CHECK_THROWS_WITH(run_command({"/nonexistent/program"}), Contains("cannot run"));
  CHECK(describe({"a", "b c", ""}) == "a 'b c' ''");
}

TEST_CASE("admin socket errors name the socket", "[harness]") {
  CHECK_THROWS_WITH(admin_socket_command("/nonexistent/osd.0.asok", R"({"prefix": "perf dump"})"),
                    Contains("/nonexistent/osd.0.asok"));
}
