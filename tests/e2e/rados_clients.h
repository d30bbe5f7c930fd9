// Helpers of the rados collector's e2e tests (tests/e2e/test_rados_client.cpp,
// tests/e2e/test_rbd_client.cpp): the daemon's config, clients held until the probes are in,
// and the client histograms' figures.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ceph_harness.h"
#include "osd_control.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"
#include "support/subprocess.h"

namespace cephscope::test::rados_e2e {

inline constexpr int kWrites = 200;
inline constexpr int kReads = 150;
inline constexpr double kOpBytes = 4096;

// The daemon's config: the osd (tier 1) and rados collectors only.
std::string daemon_config(bool instance_labels = false, const std::string& rados_extra = "",
                          const std::string& scan_interval = "1s");

// The test pool's id, as `ceph osd pool ls detail` gives it.
std::string pool_id(const ClusterInfo& cluster);

// Waits until the three probes are attached in PROCESS.
void wait_attached(Daemon& daemon, const std::string& process);

// TOOL ARGS as the cluster's client, with its first connect() (to the mon) held for 4 s by
// strace, so that the daemon finds the client and attaches before its first op.
std::vector<std::string> held_client(const ClusterInfo& cluster, const std::string& tool,
                                     const std::vector<std::string>& args);

// tests/e2e/rados_client.py in WORK with ARGS after its cluster arguments; waits until it is
// connected (and has its images open). WRAPPER (a command that execs its arguments) goes
// before it; LATE_RBD has it load librbd only when told.
std::unique_ptr<Subprocess> start_client(const ClusterInfo& cluster,
                                         const std::filesystem::path& work,
                                         const std::vector<std::string>& args,
                                         bool late_rbd = false,
                                         const std::vector<std::string>& wrapper = {});

// Every client in WORKS runs its ops now and is done.
void run_clients(const std::vector<std::filesystem::path>& works);

// Every client in WORKS exits, with status 0.
void end_clients(const std::vector<std::filesystem::path>& works,
                 std::vector<std::unique_ptr<Subprocess>>& clients);

// Makes IMAGE (layering only: no lock or object-map ops beside its data) and returns its id.
std::string make_image(const ClusterInfo& cluster, const std::string& image);

// Removes its images when it goes.
struct RemoveImages {
  const ClusterInfo& cluster;
  std::vector<std::string> images;
  RemoveImages(const ClusterInfo& c, std::vector<std::string> i)
      : cluster(c), images(std::move(i)) {}
  RemoveImages(const RemoveImages&) = delete;
  RemoveImages& operator=(const RemoveImages&) = delete;
  ~RemoveImages() {
    for (const auto& image : images) {
      run_command(tool_argv(cluster, "rbd", {"rm", image}));
    }
  }
};

// The count and sum of cephscope_client_op_seconds for some labels.
struct ClientOps {
  double count = 0;
  double sum = 0;
  [[nodiscard]] double mean() const { return count > 0 ? sum / count : 0; }
};

// A held rados bench: its summary, and the daemon scraped before and after.
struct HeldBench {
  BenchSummary summary;
  Metrics attached;  // scraped once the probes were in, before the first write
  Metrics after;
};

// The probe counts the daemon logged for PID's attaches, in order.
std::vector<int> attach_counts(const std::string& log, pid_t pid);

ClientOps client_ops(const Metrics& m, const std::map<std::string, std::string>& match);

// A 16-thread 4 KiB rados bench write of SECONDS, its output in LOG. rados bench cannot wait
// for the probes: it is held at its first connect() instead. DURING runs while it writes.
HeldBench held_rados_bench(const ClusterInfo& cluster, Daemon& daemon, const std::string& log,
                           int seconds, const std::function<void()>& during = {});

}  // namespace cephscope::test::rados_e2e
