#include "osd_views.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <thread>

#include "osd_control.h"
#include "osd_stages_common.h"

namespace cephscope::test {

using namespace std::chrono_literals;

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

Hist operator-(const Hist& a, const Hist& b) {
  return {a.count - b.count, a.sum - b.sum};
}
Hist operator+(const Hist& a, const Hist& b) {
  return {a.count + b.count, a.sum + b.sum};
}

static Hist hist(const Metrics& m, const std::string& name,
                 const std::map<std::string, std::string>& l) {
  return {m.sum(name + "_count", l), m.sum(name + "_sum", l)};
}

// One OSD's series.
static OsdView view(const Metrics& m, const ClusterInfo& c, int id) {
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

int slow_osd_during_bench(const ClusterInfo& cluster, std::chrono::seconds slow_for, double sleep,
                          int seconds) {
  const int victim = cluster.osds.back().id;
  // set before the bench starts: `ceph tell` can take seconds on a loaded host
  const std::string failed = set_dispatch_delay(cluster, victim, sleep);
  INFO(failed);
  REQUIRE(failed.empty());
  std::thread bencher([&] { bench(cluster, BenchMode::kWrite, seconds); });
  std::this_thread::sleep_for(slow_for);
  const std::string undone = set_dispatch_delay(cluster, victim, 0);
  bencher.join();
  INFO(undone);
  REQUIRE(undone.empty());
  return victim;
}

std::string longest_stage(const nlohmann::json& op) {
  std::string longest;
  double most = -1;
  for (const auto& [name, secs] : op.at("stages").items()) {
    if (secs.get<double>() > most) {
      most = secs.get<double>();
      longest = name;
    }
  }
  return longest;
}

PausedReplica slow_writes_while_replica_paused(const ClusterInfo& cluster, Daemon& daemon) {
  using namespace std::chrono_literals;
  const auto v0 = views(cluster, daemon.scrape());
  PausedReplica out{pause_replica_during_bench(cluster, 2s, 2s, 6), 0};
  settle();
  const auto v1 = views(cluster, daemon.scrape());
  for (const auto& o : cluster.osds) {
    std::printf("  %s slow writes by stage:", osd_name(o.id).c_str());
    for (const auto& st : kWriteStages) {
      const double d = v1.at(o.id).slow.at(st) - v0.at(o.id).slow.at(st);
      std::printf(" %s %.0f", st.c_str(), d);
      if (o.id != out.victim && st == "replication") {
        out.replication += d;
      }
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  return out;
}

}  // namespace cephscope::test
