// What the OSD stage e2e tests read and drive, shared by tests/e2e/test_osd_stages.cpp and
// test_osd_tiers.cpp: each OSD's series, Ceph's own counters, checks of one against the other,
// benches and a paused replica.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ceph_harness.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"

namespace cephscope::test {

// Admin sockets of the cluster's OSDs, by id.
std::map<int, std::string> host_osd_sockets(const ClusterInfo& cluster);
// Per OSD id: the perf counters of the cluster's ceph-osd with that id.
OsdSnapshot snapshot_host(const std::map<int, std::string>& sockets);

// A histogram's count and sum, as cephscope says.
struct Hist {
  double count = 0;
  double sum = 0;
  [[nodiscard]] double mean() const { return count > 0 ? sum / count : 0; }
};
Hist operator-(const Hist& a, const Hist& b);
Hist operator+(const Hist& a, const Hist& b);

// What cephscope says about one OSD.
struct OsdView {
  std::map<std::string, Hist> op;  // by op
  Hist subop;
  std::map<std::string, std::map<std::string, Hist>> stage;  // op -> stage
  std::map<std::string, Hist> subop_stage;
  std::map<std::string, double> slow;  // stage -> count (writes)
};
std::map<int, OsdView> views(const ClusterInfo& c, const Metrics& m);

bool within(double a, double b, double rel);
// Lets in-flight ops finish and the counters settle before a snapshot.
void settle();
// Checks the whole-op histogram of `op` against the counters, per OSD; returns the sum.
double check_ops(const ClusterInfo& cluster, const char* op, const std::map<int, OsdView>& a,
                 const std::map<int, OsdView>& b, const OsdSnapshot& perf);
// Every op measures every stage of STAGES, and their means add up to at most the whole op's.
void check_stages(const ClusterInfo& cluster, const char* op,
                  const std::vector<std::string>& stages, const std::map<int, OsdView>& a,
                  const std::map<int, OsdView>& b);
BenchSummary bench(const ClusterInfo& cluster, BenchMode mode, int seconds);
// Pauses the cluster's last OSD (SIGSTOP) for PAUSE, DELAY into a write bench of SECONDS:
// its primaries' writes wait for it. Returns the paused OSD's id.
int pause_replica_during_bench(const ClusterInfo& cluster, std::chrono::seconds delay,
                               std::chrono::seconds pause, int seconds);
// Makes the cluster's last OSD slow itself for the first SLOW_FOR of a write bench of SECONDS:
// it sleeps SLEEP seconds in its dispatch for every op and sub-op (set_dispatch_delay), so its
// own stamps hold the time. Returns the slow OSD's id.
int slow_osd_during_bench(const ClusterInfo& cluster, std::chrono::seconds slow_for, double sleep,
                          int seconds);

// A replica paused for 2 s in a 6 s write bench, as the daemon saw it: every OSD's slow writes
// by stage are printed; returns the paused OSD and the slow writes under replication on the
// others (their primaries wait for its commits).
struct PausedReplica {
  int victim;
  double replication;
};
PausedReplica slow_writes_while_replica_paused(const ClusterInfo& cluster, Daemon& daemon);

// The stage a slow-op record (/debug/slow-ops) gives the most time; empty when it has none.
std::string longest_stage(const nlohmann::json& op);

}  // namespace cephscope::test
