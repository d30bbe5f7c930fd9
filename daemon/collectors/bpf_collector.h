// What every collector backed by one BPF object shares: owning the object and its links,
// probe status, map usage, lost-event counters and program run time.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/collector.h"
#include "core/result.h"
#include "libbpf/handles.h"
#include "libbpf/maps.h"
#include "profile/store.h"

namespace cephscope {

// One hook a collector can load through, and the kernel feature it needs.
struct HookOption {
  const char* hook;
  const Feature& feature;
};

class BpfCollector : public Collector {
 public:
  [[nodiscard]] std::string hook() const override { return obj_ ? hook_ : "unavailable"; }
  [[nodiscard]] Cause unavailable_why() const override { return why_; }
  [[nodiscard]] std::vector<ProbeStatus> probes() const override { return probes_; }
  [[nodiscard]] std::vector<MapUsage> maps() const override;
  [[nodiscard]] std::vector<std::pair<std::string, ProgramStats>> programs() const override;
  [[nodiscard]] Result<LostCounts> lost() const override;

 protected:
  // Takes ownership of a loaded skeleton: `destroy` runs after every link is gone.
  void adopt(bpf_object* obj, std::function<void()> destroy, std::string hook);
  // Attaches one program by its SEC() definition; the outcome is reported by probes().
  void attach(bpf_program* prog, const std::string& probe);
  // Marks the collector unavailable; every probe in `names` is reported with `why`.
  void unavailable(const Cause& why, const std::vector<std::string>& names);
  // Records a probe that was left out while the rest of the collector works.
  void unavailable_probe(ProbeStatus status) { probes_.push_back(std::move(status)); }
  [[nodiscard]] bool loaded() const { return obj_ != nullptr; }
  // Loads the collector through the hooks its `hook` setting allows (auto: each of `options`
  // in turn; else that one only): load(hook) for each whose kernel feature is there, until
  // one loads. Under auto, a hook that loaded but left a probe unattached (a full trampoline,
  // an LSM's refusal) is undone and the next one tried; where none takes every probe, the
  // first such hook comes back. Ok, or why none loaded (the first tried hook's reason, every
  // detail).
  Cause load_first_hook(const std::string& wanted, std::initializer_list<HookOption> options,
                        const std::function<Status(const char* hook)>& load);
  // load_first_hook through fentry, else kprobes.
  Cause load_fentry_or_kprobe(const std::string& wanted, const KernelFeatures& features,
                              const std::function<Status(const char* hook)>& load) {
    return load_first_hook(wanted, {{"fentry", features.fentry}, {"kprobe", features.kprobe}},
                           load);
  }
  // Registers a map keyed by target id (a Key with a `target` field): prune() deletes the
  // entries of expired targets from it. Entries of untracked processes stay.
  template <typename Key>
  void prune_by_target(int map_fd) {
    pruners_.push_back([map_fd](const TargetIds& live) {
      return prune_keys<Key>(map_fd, [&](const Key& k) {
        return k.target == CEPHSCOPE_UNTRACKED || live.contains(k.target);
      });
    });
  }
  // Registers what else prune() does when targets expire.
  void prune_with(std::function<Result<std::size_t>(const TargetIds&)> pruner) {
    pruners_.push_back(std::move(pruner));
  }
  void prune_maps(const TargetIds& live) override;
  // A hook that load_first_hook undid: the collector lets go of what it kept of its maps.
  virtual void forget_maps() {}

 private:
  // Undoes adopt() and what followed it: links, object, probes and pruners past the counts
  // given (those from before the hook's load).
  void drop_hook(std::size_t probes_before, std::size_t pruners_before);

  struct Owner {
    std::function<void()> destroy;
    Owner() = default;
    Owner(const Owner&) = delete;
    Owner& operator=(const Owner&) = delete;
    ~Owner() {
      if (destroy) {
        destroy();
      }
    }
  };
  // Declaration order matters: links_ is destroyed before owner_ closes the object.
  Owner owner_;
  std::vector<Link> links_;
  bpf_object* obj_ = nullptr;
  std::string hook_;
  Cause why_;
  std::vector<ProbeStatus> probes_;
  std::vector<std::function<Result<std::size_t>(const TargetIds&)>> pruners_;
  std::string refused_;  // the first attach() that failed since the last adopt(): probe and why
};

// Why a collector is unavailable when its preferred hook (when tried) and its fallback both
// failed: the preferred hook's reason, both details.
Cause either_failed(const std::optional<Cause>& preferred, const Cause& fallback);

// The statuses of a uprobe collector's processes, one per probe, target and fsid: a target can
// have several processes, and a probe counts as attached only when it is in all of them.
class ProbeStatusMerge {
 public:
  void add(ProbeStatus st);
  // Appends the merged statuses to OUT.
  void append_to(std::vector<ProbeStatus>& out);

 private:
  std::map<std::tuple<std::string, std::string, std::string>, ProbeStatus> merged_;
};

// What a per-process (uprobe) collector's attach queue needs after the registry changed.
struct ProcessChanges {
  std::vector<std::pair<pid_t, TargetView>> attach;  // live, not attached, newly queued
  std::vector<pid_t> gone;  // attached, or queued and not yet attached, and no longer live
};

// The changes for the targets WANTED accepts: pids to attach are added to `queued` (pids with
// an attach in the queue or in progress); `attached` maps pid to anything.
template <typename Attached, typename Wanted>
ProcessChanges process_changes(const std::vector<TargetView>& targets, const Wanted& wanted,
                               const Attached& attached, std::set<pid_t>& queued) {
  ProcessChanges out;
  std::set<pid_t> live;
  for (const auto& t : targets) {
    if (!wanted(t.identity)) {
      continue;
    }
    for (const pid_t pid : t.pids) {
      live.insert(pid);
      if (!attached.contains(pid) && queued.insert(pid).second) {
        out.attach.emplace_back(pid, t);
      }
    }
  }
  for (const auto& entry : attached) {
    if (!live.contains(entry.first)) {
      out.gone.push_back(entry.first);
    }
  }
  for (const pid_t pid : queued) {
    if (!live.contains(pid)) {
      out.gone.push_back(pid);  // gone while its attach waits
    }
  }
  return out;
}

// The same for the targets of KIND.
template <typename Attached>
ProcessChanges process_changes(const std::vector<TargetView>& targets, TargetKind kind,
                               const Attached& attached, std::set<pid_t>& queued) {
  return process_changes(
      targets, [kind](const TargetIdentity& t) { return t.kind == kind; }, attached, queued);
}

// Where a uprobe collector's profile store finds and keeps profiles, and how it runs the
// resolver (profiles: in the config).
profile::StoreOptions store_options(const Config::Profiles& c);

// Realtime minus monotonic, in ns: what a program adds to bpf_ktime_get_ns() for the wall time
// of a record (libstdc++'s steady_clock is CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns()).
std::int64_t realtime_offset_ns();

// Benchmarks only: the cut asked for in environment variable VARIABLE (1..MAX, else 0), which
// makes COLLECTOR's programs stop short so that a benchmark splits their cost. Never set in
// service: what a cut program skips is not measured, and the log says so.
std::uint32_t bench_cut(const char* collector, const char* variable, std::uint32_t max);

// Makes a skeleton's filter maps the shared ones (a no-op without them, in tests).
Status reuse_tracked_maps(bpf_map* tgids, bpf_map* slots, TrackedMaps shared);

// Opens a collector's skeleton with the shared tracked-process map, its per-CPU hashes sized
// for this kernel (size_percpu_hashes).
template <typename Skel, void (*Destroy)(Skel*)>
Status open_skeleton(Skeleton<Skel, Destroy>& skel, Skel* (*open)(), const CollectorContext& ctx) {
  skel.reset(open());
  if (!skel) {
    const int err = errno;
    return error_with(reason_of_errno(err, Reason::kLoadFailed), ErrorKind::kSystem,
                      std::string("cannot open the BPF object: ") + std::strerror(err), err);
  }
  if (auto shared =
          reuse_tracked_maps(skel->maps.tracked_tgids, skel->maps.tracked_slots, ctx.tracked_maps);
      !shared.ok()) {
    return shared;
  }
  return size_percpu_hashes(skel->obj);
}

// Loads an opened skeleton into the kernel; HOOK, when given, starts the error's message.
template <typename Skel, void (*Destroy)(Skel*)>
Status load_skeleton(Skeleton<Skel, Destroy>& skel, int (*load)(Skel*),
                     const std::string& hook = {}) {
  if (const int err = load(skel.get()); err != 0) {
    return error_with(reason_of_errno(-err, Reason::kLoadFailed), ErrorKind::kSystem,
                      (hook.empty() ? "" : hook + ": ") + "BPF load failed: " + std::strerror(-err),
                      -err);
  }
  return ok_status();
}

}  // namespace cephscope
