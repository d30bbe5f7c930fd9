// The daemon's configuration: parsed strictly from YAML, so a typo is an error that names
// the key and its line, never a silently ignored setting.
#pragma once

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "config/syscall_names.h"
#include "core/buckets.h"
#include "core/result.h"

namespace cephscope {

// collectors.osd.detail: when tier 2 runs.
enum class DetailMode { kNever, kAuto, kAlways };
const char* to_string(DetailMode mode);

// An operator-defined target: a process whose executable path or comm matches.
struct Matcher {
  std::string name;  // `process` label; the process's comm when empty
  std::string exe_pattern;
  std::string comm_pattern;
  std::optional<std::regex> exe;
  std::optional<std::regex> comm;
};

// A static-marker rule (usdt:, docs/collectors/usdt.md): one marker counted, or a pair of
// markers timed as a span.
struct UsdtRule {
  std::vector<std::string> targets;  // matcher names, "ceph-osd", "librados-client"
  std::string binary;                // a path inside the target's root, or a library's name
  std::string provider;
  std::string probe;  // counted: cephscope_usdt_events_total{probe}; empty for a span
  std::string span;   // cephscope_usdt_span_seconds{span}; empty for a counted marker
  std::string start;
  std::string end;
  unsigned key = 0;  // the argument (from 1) that start and end share; 0: the thread

  // "python:function__entry", or "python:call" for a span
  [[nodiscard]] std::string name() const { return provider + ":" + (span.empty() ? probe : span); }
};

struct CollectorConfig {
  bool enabled = true;
  std::string hook = "auto";  // auto, or one hook type the collector supports
  // The classic buckets of its histograms (docs/metrics.md#series-budget): full, coarse or
  // none; unset is "auto", whose meaning is the collector's (syscall, vfs, osd).
  std::optional<Buckets> buckets;
};

// Where the container runtimes keep their records on the host (discovery/containers.h); a
// DaemonSet mounts them elsewhere.
struct ContainerStateDirs {
  std::string podman = "/var/lib/containers/storage";
  std::string docker = "/var/lib/docker";
  std::string kubelet_pod_logs = "/var/log/pods";
};

struct Config {
  std::string listen = "0.0.0.0:9488";
  std::string log_level = "info";
  bool mount_tracefs = true;
  bool strict_attach = false;  // exit when a probe fails to attach, instead of reporting it
  // TLS and basic auth for the endpoint, in the exporter toolkit's format; "" for plain HTTP
  std::string web_config_file;

  struct Discovery {
    std::chrono::milliseconds scan_interval{10'000};
    std::chrono::milliseconds series_ttl{300'000};
    bool ceph_osd = true;
    bool rados_clients = true;
    std::vector<Matcher> matchers;
    ContainerStateDirs containers;  // the runtimes' records, for container and pod names
  } discovery;

  struct Collectors {
    CollectorConfig syscall;
    // The syscalls traced (collectors.syscall.syscalls): the storage ones by default
    std::vector<std::string> syscalls{kStorageSyscalls.begin(), kStorageSyscalls.end()};
    CollectorConfig block;
    CollectorConfig vfs;
    CollectorConfig osd;      // uprobes in ceph-osd, attached per OSD process
    CollectorConfig rados;    // uprobes in librados clients' Objecter, attached per process
    CollectorConfig kclient;  // the kernel's Ceph client: krbd and CephFS (libceph, rbd, ceph)
    // Label client ops by rbd image (librbd) or process id (collectors.rados.instance_labels):
    // many clients share a process name (every VM is qemu-system-x86_64)
    bool rados_instance_labels = false;
    // Client ops slower than this are recorded on /debug/slow-ops
    // (collectors.rados.slow_op_threshold; 0 turns the records off)
    std::chrono::milliseconds rados_slow_op_threshold{1000};
    // Ops slower than this count in cephscope_osd_slow_ops_total and are recorded
    // (collectors.osd.slow_op_threshold; 0 turns both off)
    std::chrono::milliseconds osd_slow_op_threshold{1000};
    // Slow-op records kept for /debug/slow-ops (collectors.osd.slow_op_records)
    std::size_t osd_slow_op_records = 100;
    // Tier 2 (collectors.osd.detail): BlueStore's transaction stages, 3 to 4 more uprobe hits
    // per transaction, one on the kv_final thread, and 5 more histograms per op kind.
    // "never": tier 1 alone, one hit per OSD op; "always"; "auto": tier 2 in bounded windows
    // per OSD (collectors.osd.detail_window), opened when its slow ops rise or its tier-1 p99
    // over the last minute exceeds detail_p99_bound (at most one automatic window per
    // detail_min_interval), and on an operator's POST /debug/osd-detail.
    DetailMode osd_detail = DetailMode::kAuto;
    std::chrono::milliseconds osd_detail_window{60'000};
    std::chrono::milliseconds osd_detail_min_interval{600'000};
    std::chrono::milliseconds osd_detail_p99_bound{500};
    // The bluestore layer (collectors.osd.bluestore_layer): the bytes BlueStore and BlueFS write
    // to the device, one uprobe hit per device write (about 1.7 per OSD op under small writes).
    bool osd_bluestore_layer = true;
    // Per-target block latency histograms (collectors.block.target_histograms): the
    // per-device ones carry the latency; per target only the bytes by default.
    bool block_target_histograms = false;
    // Queue freezes: fentry, else kprobes ("auto"), or only the one named
    // (collectors.block.freeze_hook)
    std::string block_freeze_hook = "auto";
  } collectors;

  std::vector<UsdtRule> usdt;

  struct Limits {
    std::size_t max_series = 50'000;
  } limits;

  // Spans out (metrics/otlp_exporter.h): off while otlp_endpoint is empty.
  struct Traces {
    std::string otlp_endpoint;                // http(s)://host:4318/v1/traces
    std::size_t queue_size = 2048;            // records waiting to be sent; beyond, the oldest go
    std::chrono::milliseconds timeout{5000};  // one request
  } traces;

  // Probe profiles: where they are kept, and the resolver process that makes a missing one.
  struct Profiles {
    std::string cache_dir = "/var/lib/cephscope/profiles";
    std::vector<std::string> shipped_dirs = {"/usr/share/cephscope/profiles"};
    std::string resolver;  // "": cephscope-resolver beside the daemon, else the installed one
    std::chrono::milliseconds resolve_timeout{300'000};
    std::size_t resolver_memory_mib = 4096;  // the resolver's address-space limit
  } profiles;
};

// Parses YAML text; `source` names the file in error messages ("FILE:LINE: key: problem").
// config_dir: the directory relative shipped_dirs are taken from (load_config: the file's);
// empty, such a path is an error.
Result<Config> parse_config(const std::string& yaml_text, const std::string& source,
                            const std::string& config_dir = "");
Result<Config> load_config(const std::string& path);

// "250ms", "10s", "5m", "1h" -> milliseconds; nullopt when malformed.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text);

}  // namespace cephscope
