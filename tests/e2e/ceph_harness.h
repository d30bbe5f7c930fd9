// Test-only helpers for the Ceph end-to-end layer: run commands, drive `rados bench` and parse
// its summary, read OSD perf counters through their admin sockets, take before/after deltas.
//
// The cluster comes from tests/ceph/cluster.sh (see docs/testing-ceph.md); tests find it through
// CEPHSCOPE_CEPH_DIR, whose cluster.json this file reads. Failures throw std::runtime_error
// with a message naming the command or file: every failure here is fatal to the test that hit it.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cephscope::test {

// ---------------------------------------------------------------------------- commands

struct CommandResult {
  int exit_code = -1;      // exit status, or 128 + signal when killed by a signal
  bool timed_out = false;  // killed because it ran longer than the timeout
  std::string out;         // everything written to stdout
  std::string err;         // everything written to stderr
  double seconds = 0;      // wall time

  [[nodiscard]] bool ok() const { return exit_code == 0 && !timed_out; }
};

// Runs argv[0] (looked up in PATH) with stdin from /dev/null, capturing stdout and stderr.
// On timeout the command's whole process group gets SIGKILL. Throws only when it cannot start.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::minutes(5));

// "a b 'c d'": argv as a shell would show it, for messages.
std::string describe(const std::vector<std::string>& argv);

// ---------------------------------------------------------------------------- the cluster

struct CephDaemon {
  std::string name;  // "osd.0", "mon.a", "mgr.x"
  int id = -1;       // OSD id; -1 for mon and mgr
  pid_t pid = 0;
  std::string asok;       // admin socket path
  std::string container;  // its podman container, in a container cluster
};

struct ClusterInfo {
  std::string dir;
  std::string release = "pacific";  // "reef", "tentacle": a container cluster's release
  // Runs the cluster's own ceph and rados: empty for the host's, else a container's
  // (`podman exec NAME`), in which `conf` and `keyring` are paths.
  std::vector<std::string> tool_prefix;
  std::string conf;  // ceph.conf: pass as -c to ceph and rados
  std::string keyring;
  std::string fsid;
  std::string mon_addr;  // 127.0.0.1:PORT
  std::string pool;      // the replicated pool for benches
  int pool_size = 0;
  CephDaemon mon;
  CephDaemon mgr;
  std::vector<CephDaemon> osds;
};

ClusterInfo parse_cluster_info(std::string_view json);

// TOOL ("ceph", "rados") of the cluster's release with -c CONF, then ARGS.
std::vector<std::string> tool_argv(const ClusterInfo& cluster, const std::string& tool,
                                   const std::vector<std::string>& args);
ClusterInfo load_cluster_info(const std::string& cluster_json_path);

// The cluster named by CEPHSCOPE_CEPH_DIR ($CEPHSCOPE_CEPH_DIR/cluster.json); nullopt when the
// variable is unset. Throws when it is set but the cluster file is missing or malformed.
std::optional<ClusterInfo> cluster_from_env();

// Sum of the resident set sizes (VmRSS) of the cluster's daemons, in bytes.
std::uint64_t cluster_rss_bytes(const ClusterInfo& cluster);

// ---------------------------------------------------------------------------- rados bench

enum class BenchMode { kWrite, kSeq, kRand };
const char* to_string(BenchMode mode);

// The summary rados bench prints at its end ("Total time run:" ... "Min latency(s):").
struct BenchSummary {
  BenchMode mode = BenchMode::kWrite;
  double total_time_s = 0;
  std::uint64_t total_ops = 0;  // "Total writes made" / "Total reads made"
  std::uint64_t op_size = 0;    // "Write size" / "Read size", bytes
  std::uint64_t object_size = 0;
  double bandwidth_mb_s = 0;  // "Bandwidth (MB/sec)" (MiB/s: rados divides by 1048576)
  double avg_iops = 0;
  double stddev_iops = 0;
  double max_iops = 0;
  double min_iops = 0;
  double avg_latency_s = 0;
  std::optional<double> stddev_latency_s;  // printed for writes only
  double max_latency_s = 0;
  double min_latency_s = 0;
};

// Parses rados bench's stdout. Throws when a required field is missing.
BenchSummary parse_rados_bench(std::string_view text);

struct BenchOptions {
  BenchMode mode = BenchMode::kWrite;
  int seconds = 5;
  std::uint64_t block_size = 4096;  // writes only; reads use the size written
  int threads = 16;
  bool no_cleanup = true;  // writes: keep the objects so seq/rand reads have data
};

// rados -c CONF -p POOL bench SECONDS MODE -t THREADS [-b SIZE --no-cleanup]
std::vector<std::string> rados_bench_argv(const ClusterInfo& cluster, const BenchOptions& opt);
BenchSummary run_rados_bench(const ClusterInfo& cluster, const BenchOptions& opt);

// rados -p POOL cleanup: removes the objects a --no-cleanup write left behind. Returns how many
// it removed ("Removed N objects"; nothing at all when there was nothing to remove).
std::uint64_t rados_cleanup(const ClusterInfo& cluster);

// Removes the benchmark objects when it goes out of scope, even when an assertion fails half
// way; a failing cleanup is printed, never thrown from the destructor.
struct CleanupGuard {
  const ClusterInfo& cluster;
  explicit CleanupGuard(const ClusterInfo& c) : cluster(c) {}
  CleanupGuard(const CleanupGuard&) = delete;
  CleanupGuard& operator=(const CleanupGuard&) = delete;
  ~CleanupGuard();
};
std::uint64_t parse_rados_cleanup(std::string_view text);

// Every rados bench run adds exactly one op on top of its summary's total: a write run stores
// the object benchmark_last_metadata at its end, a seq or rand run reads it first. The OSDs'
// op_w / op_r counters therefore move by total_ops + kBenchMetadataOps.
inline constexpr std::uint64_t kBenchMetadataOps = 1;

// ---------------------------------------------------------------------------- perf counters

struct LatencyCounter {
  std::uint64_t avgcount = 0;
  double sum = 0;  // seconds
  [[nodiscard]] double average() const {
    return avgcount ? sum / static_cast<double>(avgcount) : 0;
  }
};

// The OSD's "osd" perf counter section, the fields the e2e tests compare against.
struct OsdCounters {
  std::uint64_t op = 0;  // client ops of any kind
  std::uint64_t op_w = 0;
  std::uint64_t op_r = 0;
  std::uint64_t op_rw = 0;
  std::uint64_t op_in_bytes = 0;
  std::uint64_t op_out_bytes = 0;
  LatencyCounter op_latency;
  LatencyCounter op_w_latency;
  LatencyCounter op_r_latency;
  std::uint64_t subop = 0;  // replication ops received from a primary
  std::uint64_t subop_w = 0;
  std::uint64_t subop_w_in_bytes = 0;
  LatencyCounter subop_w_latency;
  // BlueStore's per-transaction state latencies (section "bluestore"): prepare, aio_wait,
  // io_done, kv_queued, kv_commiting (sic); zero when the dump has no BlueStore section.
  std::array<LatencyCounter, 5> bluestore_state;
  // BlueStore's and BlueFS's byte counters, by kStoreCounters; zero when the dump lacks one.
  std::array<std::uint64_t, 9> store_bytes{};
};

// The counters of the bytes BlueStore and BlueFS write (sections "bluestore", "bluefs"), in
// the order of OsdCounters::store_bytes; "a|b": Pacific's name, then Reef's and later ones'.
enum StoreCounter {
  kWriteBigBytes,
  kWriteSmallBytes,
  kWritePadBytes,
  kWriteDeferredBytes,  // bytes queued as deferred writes
  kDeferredWriteBytes,  // deferred writes submitted to the device
  kBlueFsWal,
  kBlueFsSst,
  kBlueFsLogged,
  kBlueFsLogCompactions,  // a count: each rewrites BlueFS's log, which logged_bytes leaves out
};
inline constexpr std::array<std::pair<const char*, const char*>, 9> kStoreCounters = {{
    {"bluestore", "bluestore_write_big_bytes|write_big_bytes"},
    {"bluestore", "bluestore_write_small_bytes|write_small_bytes"},
    {"bluestore", "write_pad_bytes"},
    {"bluestore", "bluestore_write_deferred_bytes|issued_deferred_write_bytes"},
    {"bluestore", "deferred_write_bytes|submitted_deferred_write_bytes"},
    {"bluefs", "bytes_written_wal"},
    {"bluefs", "bytes_written_sst"},
    {"bluefs", "logged_bytes"},
    {"bluefs", "log_compactions"},
}};

inline constexpr std::array<const char*, 5> kBlueStoreStates = {
    "state_prepare_lat", "state_aio_wait_lat", "state_io_done_lat", "state_kv_queued_lat",
    "state_kv_commiting_lat"};

// Parses the JSON of `perf dump` (the whole dump; reads its "osd" section).
OsdCounters parse_osd_perf_dump(std::string_view json);

// after - before, counter by counter. Throws if a counter went backwards (OSD restarted).
OsdCounters delta(const OsdCounters& before, const OsdCounters& after);

// One snapshot per OSD id.
using OsdSnapshot = std::map<int, OsdCounters>;
OsdSnapshot delta(const OsdSnapshot& before, const OsdSnapshot& after);
OsdCounters sum(const OsdSnapshot& snapshot);

// Sends one command to a Ceph admin socket (the protocol of `ceph --admin-daemon`: the JSON
// command and a NUL; the reply is a 32-bit big-endian length and that many bytes).
std::string admin_socket_command(const std::string& asok_path, std::string_view json_command,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30));

// perf dump of every OSD of the cluster, through its admin socket.
OsdSnapshot snapshot_osds(const ClusterInfo& cluster);

}  // namespace cephscope::test
