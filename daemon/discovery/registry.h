// The set of targets: which processes are tracked (mirrored into the BPF filter map), under
// which target id, and with which labels. Target ids are never reused, so map entries of an
// expired target are known to be stale. A target whose processes all exited keeps its series
// for the configured TTL (an OSD restarted within it continues the same series).
//
// Identity (docs/operations.md#identity): an OSD target is (fsid, osd.N), so two clusters on
// one host never share series. Anything can call itself ceph-osd and say -i N: the first
// live process to claim osd.N of a cluster holds it; a process forked by the holder (ceph-osd
// daemonising) joins it. Any other live process claiming osd.N of the same cluster, or with
// no fsid at all, while a holder lives is contested: logged once, counted on
// cephscope_osd_identity_conflict, never tracked (no series of its own, none merged into the
// holder's), and it stays contested for its whole life, so it cannot inherit osd.N when the
// holder restarts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/labels.h"
#include "core/result.h"
#include "discovery/classify.h"
#include "discovery/tracked_maps.h"

namespace cephscope {

using Clock = std::chrono::steady_clock;

struct TargetView {
  std::uint32_t id = 0;
  TargetIdentity identity;
  std::vector<pid_t> pids;  // live processes, empty while the target awaits its TTL
};

class TargetRegistry {
 public:
  // maps: the BPF filter maps shared by all collectors (none, for tests without BPF).
  TargetRegistry(TrackedMaps maps, std::chrono::milliseconds ttl, std::size_t max_targets);

  // Starts tracking a process; idempotent for a process already tracked.
  Status track(const ProcessInfo& info, const TargetIdentity& identity, Clock::time_point now);
  // The process exited (the BPF side has already dropped it from the filter map), or WHY
  // else it leaves its target (logged).
  void forget(pid_t pid, Clock::time_point now, std::string_view why = "exited");
  // After a full /proc scan: forgets tracked processes that are no longer there.
  void reconcile(const std::unordered_set<pid_t>& alive, Clock::time_point now);
  // Drops targets whose processes all exited more than the TTL ago.
  void expire(Clock::time_point now);
  void set_ttl(std::chrono::milliseconds ttl);

  // Whether this exact process (pid and start time) is already tracked.
  [[nodiscard]] bool is_tracked(pid_t pid, std::uint64_t start_time) const;
  // Whether this exact process claimed an osd.N another process holds.
  [[nodiscard]] bool is_contested(pid_t pid, std::uint64_t start_time) const;
  // Live contested claimants, by the ceph_daemon they claim ("osd.3" -> 1).
  [[nodiscard]] std::map<std::string, std::size_t> conflicts() const;
  // Files or lookups discovery refused, by reason (core/safe_file.h's words, "timeout", ...).
  void note_refusal(const std::string& reason);
  [[nodiscard]] std::map<std::string, std::uint64_t> refusals() const;
  [[nodiscard]] std::vector<TargetView> snapshot() const;
  // Moves with every change snapshot() would show, so the daemon loop hands collectors a
  // snapshot only when there is something new in it.
  [[nodiscard]] std::uint64_t generation() const;
  // Labels of every known target, by id, for the collectors' scrape.
  [[nodiscard]] std::unordered_map<std::uint32_t, Labels> labels() const;
  [[nodiscard]] std::size_t tracked_processes() const;

 private:
  struct Target {
    std::uint32_t id;
    TargetIdentity identity;
    std::unordered_set<pid_t> pids;
    Clock::time_point last_alive;
  };
  struct Process {
    std::uint32_t target_id;
    std::uint64_t start_time;
  };
  struct Contender {
    std::uint64_t start_time;
    std::string ceph_daemon;
  };

  void forget_locked(pid_t pid, Clock::time_point now, std::string_view why = "exited");
  // Rewrites the filter slot of pid from the tracked processes that map to it.
  Status sync_slot_locked(pid_t pid) const;
  // The live target that a claim of identity contests (nullptr: none): the same osd.N of
  // the same cluster, not the claimant's parent.
  [[nodiscard]] const Target* live_holder(const TargetIdentity& identity, pid_t ppid) const;

  mutable std::mutex mu_;
  TrackedMaps maps_;
  std::chrono::milliseconds ttl_;
  std::size_t max_targets_;
  std::uint32_t next_id_ = 1;
  std::uint64_t generation_ = 0;
  std::map<std::string, Target> targets_;  // by identity key
  std::unordered_map<pid_t, Process> processes_;
  std::unordered_map<pid_t, Contender> contested_;
  std::map<std::string, std::uint64_t> refusals_;
};

// The labels that name a target in every series: ceph_daemon and fsid (when known) for Ceph
// daemons, process for everything else.
Labels target_labels(const TargetIdentity& identity);

}  // namespace cephscope
