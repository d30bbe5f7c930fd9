// The test cluster's OSDs as processes and as the cluster sees them: restart an OSD exactly
// as tests/ceph/cluster.sh started it, and wait for the cluster to take it back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ceph_harness.h"

namespace cephscope::test {

std::string read_file(const std::string& path);
void write_file_atomic(const std::string& path, const std::string& text);
std::vector<std::string> split_nul(const std::string& s);
std::string exe_of(pid_t pid);
bool alive(pid_t pid);  // exists and is not a zombie
std::string which(const std::string& name);
// A daemon config body with only the OSD collector on (discovery of ceph-osd every second, no
// rados clients); `osd_options` goes inside its braces, e.g. ", slow_op_threshold: 1s".
std::string osd_only_config(const std::string& osd_options = "");
// Polls `done` every `period` until it returns true; the seconds it took, nullopt on timeout.
std::optional<double> poll_until(const std::function<bool()>& done,
                                 std::chrono::milliseconds timeout,
                                 std::chrono::milliseconds period = std::chrono::milliseconds(50));

nlohmann::json ceph_json(const ClusterInfo& cluster, const std::vector<std::string>& args);
bool osds_up(const ClusterInfo& cluster);
bool pgs_clean(const ClusterInfo& cluster);
// `ceph -s` as text (or why it failed): what a test prints when the cluster did not settle.
std::string cluster_status(const ClusterInfo& cluster);

// One OSD in the OSD map: up or down, and the map epoch from which its current instance is up.
// A new instance of the OSD (a restart) is up from a later epoch; until the mon has seen the
// old one fail, the map still says "up" with the old epoch.
struct OsdMapEntry {
  bool up = false;
  long up_from = 0;
};

std::optional<OsdMapEntry> osd_map_entry(const ClusterInfo& cluster, int id);

// How the running OSD was started: what /proc says before it dies.
struct Launch {
  std::string exe;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string cwd;
};

Launch launch_of(pid_t pid);
// Starts the OSD again as `l` describes (setsid, stdin /dev/null, output appended to log_path).
pid_t start_like(const Launch& l, const std::string& log_path);
// Records the restarted OSD's pid in DIR/pid, DIR/env and DIR/cluster.json.
void record_pid(ClusterInfo& cluster, int osd_id, pid_t pid);
// Stops OSD `id` (SIGTERM; SIGKILL after 30 s) and starts it as `how` describes, records its
// pid, and waits until the OSD map has the new instance up and every PG is active+clean.
// Returns the new pid, or nullopt when the cluster did not take it back within 180 s.
std::optional<pid_t> restart_osd(ClusterInfo& cluster, int id, const Launch& how);

// Makes OSD ID sleep SECONDS in its dispatch for every op and sub-op it takes (Ceph's own
// osd_debug_inject_dispatch_delay_*, set with `ceph tell`; 0 stops it). The sleep comes after
// the message's receive stamps, so the OSD's own stamps hold it (a SIGSTOP would hide it).
// Returns what `ceph tell` said when it failed, empty on success.
std::string set_dispatch_delay(const ClusterInfo& cluster, int id, double seconds);

}  // namespace cephscope::test
