// ceph_bench_report: prints the test cluster's rados bench figures (4 KiB and 64 KiB, 16
// threads: write, seq read, random read), the OSDs' own latency for the same ops, the OSDs'
// CPU time per op, and the memory of the cluster's daemons. Figures only: nothing is asserted
// about timings (a 2-core shared machine swings 2x from run to run).
//
//   CEPHSCOPE_CEPH_DIR=DIR [CEPHSCOPE_BENCH_SECONDS=10] ceph_bench_report
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ceph_harness.h"

using namespace cephscope::test;

namespace {

// utime + stime of the OSDs, in seconds (/proc/PID/stat fields 14 and 15)
double osd_cpu_seconds(const ClusterInfo& cluster) {
  double total = 0;
  for (const auto& osd : cluster.osds) {
    std::ifstream in("/proc/" + std::to_string(osd.pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
    std::string field;
    unsigned long long utime = 0;
    unsigned long long stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) {
        utime = std::stoull(field);
      } else if (i == 15) {
        stime = std::stoull(field);
      }
    }
    total += static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return total;
}

void row(const char* what, std::uint64_t bs, const BenchSummary& s, const OsdCounters& t,
         double cpu_s, bool write) {
  const auto& lat = write ? t.op_w_latency : t.op_r_latency;
  std::uint64_t osd_ops = write ? t.op_w : t.op_r;
  std::printf("%-6s %-5s %9llu %9.0f %9.3f %9.2f %9.3f %9.0f\n", what, bs == 4096 ? "4K" : "64K",
              static_cast<unsigned long long>(s.total_ops), s.avg_iops, s.avg_latency_s * 1e3,
              s.bandwidth_mb_s, lat.average() * 1e3,
              osd_ops ? cpu_s * 1e6 / static_cast<double>(osd_ops) : 0.0);
}

}  // namespace

int main() {
  if (geteuid() != 0) {
    std::printf("skipped: needs root\n");
    return 77;
  }
  std::optional<ClusterInfo> cluster;
  try {
    cluster = cluster_from_env();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  if (!cluster) {
    std::printf("skipped: CEPHSCOPE_CEPH_DIR is unset (no test cluster)\n");
    return 77;
  }
  const char* env = std::getenv("CEPHSCOPE_BENCH_SECONDS");
  int seconds = env && std::atoi(env) > 0 ? std::atoi(env) : 10;
  try {
    std::printf("cluster %s: %zu OSDs, pool %s size %d; %d s per run, 16 threads\n",
                cluster->dir.c_str(), cluster->osds.size(), cluster->pool.c_str(),
                cluster->pool_size, seconds);
    std::printf("memory (sum of VmRSS of mon, mgr, OSDs) before: %.0f MiB\n",
                static_cast<double>(cluster_rss_bytes(*cluster)) / 1048576.0);
    std::printf("%-6s %-5s %9s %9s %9s %9s %9s %9s\n", "op", "size", "ops", "IOPS", "lat_ms",
                "MB/s", "osd_lat", "cpu_us/op");
    for (std::uint64_t bs : {4096ULL, 65536ULL}) {
      rados_cleanup(*cluster);
      BenchOptions opt;
      opt.seconds = seconds;
      opt.block_size = bs;
      for (BenchMode mode : {BenchMode::kWrite, BenchMode::kSeq, BenchMode::kRand}) {
        opt.mode = mode;
        auto before = snapshot_osds(*cluster);
        double cpu0 = osd_cpu_seconds(*cluster);
        auto s = run_rados_bench(*cluster, opt);
        double cpu = osd_cpu_seconds(*cluster) - cpu0;
        auto t = sum(delta(before, snapshot_osds(*cluster)));
        row(to_string(mode), bs, s, t, cpu, mode == BenchMode::kWrite);
      }
      std::printf("memory after the %s runs: %.0f MiB\n", bs == 4096 ? "4K" : "64K",
                  static_cast<double>(cluster_rss_bytes(*cluster)) / 1048576.0);
      rados_cleanup(*cluster);
    }
    std::printf(
        "lat_ms: rados bench's average latency; osd_lat: the OSDs' op_w_latency / op_r_latency "
        "average; cpu_us/op: ceph-osd CPU time (all 3 OSDs) per client op\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    try {
      rados_cleanup(*cluster);
    } catch (...) {
    }
    return 1;
  }
  return 0;
}
