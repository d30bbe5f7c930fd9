// rados collector: client-observed op latency in every librados client of the host, from
// uprobes on the Objecter of the library each client calls, attached to the library file (so
// the kernel puts them into every process that maps it, before its first op) at offsets of
// the library build's probe profile. See docs/collectors/rados.md.
#include "collectors/collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "bpf/rados.h"
#include "collectors/bpf_collector.h"
#include "collectors/exemplars.h"
#include "collectors/process_attacher.h"
#include "collectors/rados/client_libraries.h"
#include "collectors/rados/placed_entries.h"
#include "collectors/rados/rados_probes.h"
#include "collectors/rados/rados_records.h"
#include "collectors/rados/rados_series.h"
#include "collectors/ring_reader.h"
#include "collectors/slow_ops.h"
#include "libbpf/maps.h"
#include "profile/store.h"
#include "rados.skel.h"

namespace cephscope {
namespace {

using RadosSkel = Skeleton<rados_bpf, rados_bpf__destroy>;
using rados::add_stats;
using rados::FileKey;
using rados::inode_of;
using rados::library_dirs;

// How often attached clients are checked for client libraries loaded since.
constexpr auto kRecheck = std::chrono::seconds(2);

class RadosCollector final : public BpfCollector {
 public:
  explicit RadosCollector(const CollectorContext& ctx)
      : store_(store_options(ctx.config.profiles)), set_(rados::probe_set()) {
    start(ctx);
  }
  RadosCollector(const RadosCollector&) = delete;
  RadosCollector& operator=(const RadosCollector&) = delete;
  RadosCollector(RadosCollector&&) = delete;
  RadosCollector& operator=(RadosCollector&&) = delete;
  ~RadosCollector() override {
    records_.reset();  // its thread reads the attached processes
    attacher_.stop();  // before libraries_ and the object go
  }
  [[nodiscard]] const char* name() const override { return "rados"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;
  void sync_targets(const std::vector<TargetView>& targets) override;
  [[nodiscard]] std::vector<ProbeStatus> probes() const override;
  void refresh(Clock::time_point /*now*/) override {
    if (skel_ != nullptr) {
      skel_->bss->rt_off_ns = realtime_offset_ns();
    }
  }

 private:
  // A client library file with the probes in it: attached for every process (pid -1), so the
  // kernel puts them into each process that maps the file, at the mapping.
  struct Library {
    std::string name;          // "librados.so.2.0.0"
    std::string profile_line;  // "profile BUILD (ORIGIN) from LOCATION", for the clients' logs
    std::vector<std::uint32_t> keys;       // its entries in rados_layouts
    std::vector<std::uint32_t> site_keys;  // and in rados_marker_sites
    std::vector<Link> links;
    std::vector<ProbeStatus> status;  // per probe; the target is each client's
    std::size_t users = 0;            // tracked clients that map it
    bool host = false;                // the daemon's root's: kept while the daemon runs
  };
  // A client process: the libraries it maps, or why none has probes.
  struct Process {
    std::string who;  // the process label, for statuses and logs
    std::uint32_t target = 0;
    std::set<std::string> seen;        // the libraries found mapped and looked at
    std::vector<FileKey> libs;         // those with probes (a user of each)
    std::vector<ProbeStatus> refused;  // why not, while no library has the probes
  };
  using SeriesKey =
      std::tuple<std::uint32_t, std::int64_t, std::uint32_t, std::uint32_t, std::string>;

  void start(const CollectorContext& ctx);
  // A client that went: its series carried, its libraries released.
  void release_process(pid_t pid, Process& gone);
  // Probes the client libraries of the daemon's own root before any client maps them.
  void probe_host_libraries(const std::stop_token& stop);
  // Deletes the per-process series of a client that exited (instance labels): pids are not
  // reused for a series, so they would only pile up.
  void forget_pid(std::uint32_t pid);
  // Moves the entries a client folded before it was tracked (target CEPHSCOPE_UNTRACKED, its
  // pid) into carried_ under TARGET, once it has exited: its series never go back.
  void carry_pending(std::uint32_t pid, std::uint32_t target);
  // Deletes the entries of untracked processes that exited without being tracked.
  void sweep_pending();
  // One op's record: a series' new slowest goes to the exemplars; a slow one is kept for
  // /debug/slow-ops and logged.
  void take_record(const rados_slow_record& r);
  // Finds the libraries of PID not yet seen and makes it a user of those with probes,
  // probing a library file the first time a client maps it; a client may load one later
  // (qemu loads librbd with its rbd block driver).
  void scan_libraries(pid_t pid, Process& proc, const std::stop_token& stop);
  // Every kRecheck: libraries attached clients mapped since; untracked processes gone.
  void recheck(const std::stop_token& stop);
  // Places and attaches the probes of one library file; WHO names it in logs.
  Library probe_library(const std::string& who, const std::string& path, const std::string& name,
                        const std::string& profile_line, rados::BuildPlan plan);
  // Gives back a library's entries in rados_layouts.
  void unplace(const Library& lib);
  // One user fewer of each of LIBS: a library no client maps any more is detached, but the
  // daemon's root's.
  void release(const std::vector<FileKey>& libs);
  [[nodiscard]] std::size_t probes_in(const Process& proc) const;
  [[nodiscard]] SeriesKey series_key(const rados_stats_key& k, std::uint32_t target) const;

  profile::ProfileStore store_;  // the worker's
  profile::ProbeSet set_;
  rados_bpf* skel_ = nullptr;  // owned by the base (adopt)
  int stats_fd_ = -1;
  int layouts_fd_ = -1;
  int sites_fd_ = -1;
  Buckets buckets_ = Buckets::kFull;
  bool instance_labels_ = false;
  bool host_libraries_ = false;
  SlowOpLog* slow_ops_ = nullptr;
  ExemplarTable<SeriesKey> exemplars_;

  // The worker's: what each rados_layouts and rados_marker_sites entry holds, and how many
  // libraries put it there.
  PlacedEntries<rados_layout> placed_;
  PlacedEntries<rados_marker_site> placed_sites_;

  // Under the maps lock (scrapes, prunes and the worker): series of exited clients that they
  // folded before they were tracked.
  std::map<SeriesKey, rados_stats> carried_;

  mutable std::mutex mu_;                  // guards the members below; taken after the maps lock
  std::map<pid_t, std::uint32_t> owners_;  // client pids and their targets, until carried
  std::map<FileKey, Library> libraries_;   // written by the worker only
  std::unique_ptr<RingReader> records_;
  ProcessAttacher<Process> attacher_{mu_};  // last: stops first
};

void RadosCollector::start(const CollectorContext& ctx) {
  std::vector<std::string> all;
  all.reserve(rados::kUprobes.size());
  for (const auto& u : rados::kUprobes) {
    all.emplace_back(u.function);
  }
  RadosSkel skel;
  if (auto opened = open_skeleton(skel, rados_bpf__open, ctx); !opened.ok()) {
    unavailable(cause_of(opened.error(), Reason::kLoadFailed), all);
    return;
  }
  instance_labels_ = ctx.config.collectors.rados_instance_labels;
  host_libraries_ = ctx.config.discovery.rados_clients;
  skel->rodata->instance_labels = instance_labels_;
  skel->rodata->slot_seed = random_seed();
  if (auto loaded = load_skeleton(skel, rados_bpf__load); !loaded.ok()) {
    unavailable(cause_of(loaded.error(), Reason::kLoadFailed), all);
    return;
  }
  buckets_ = buckets_setting(ctx.config.collectors.rados.buckets, Buckets::kFull);
  stats_fd_ = bpf_map__fd(skel->maps.rados_stats);
  layouts_fd_ = bpf_map__fd(skel->maps.rados_layouts);
  sites_fd_ = bpf_map__fd(skel->maps.rados_marker_sites);
  prune_by_target<rados_stats_key>(stats_fd_);
  prune_with([this](const TargetIds& live) -> Result<std::size_t> {
    exemplars_.erase_if([&](const SeriesKey& k) { return !live.contains(std::get<0>(k)); });
    return std::erase_if(
        carried_, [&](const auto& entry) { return !live.contains(std::get<0>(entry.first)); });
  });
  skel_ = skel.release();
  rados_bpf* raw = skel_;
  adopt(
      raw->obj, [raw] { rados_bpf__destroy(raw); }, "uprobe");
  store_.load_shipped();
  skel_->bss->rt_off_ns = realtime_offset_ns();
  slow_ops_ = ctx.slow_ops;
  if (slow_ops_ != nullptr) {
    skel_->bss->exemplar_interval = next_exemplar_interval(0);
    skel_->bss->slow_ns = static_cast<std::uint64_t>(
        std::chrono::nanoseconds(ctx.config.collectors.rados_slow_op_threshold).count());
    records_ = RingReader::start(bpf_map__fd(skel_->maps.rados_records), "rados",
                                 [this](const void* data, std::size_t size) {
                                   if (size >= sizeof(rados_slow_record)) {
                                     take_record(*static_cast<const rados_slow_record*>(data));
                                   }
                                 });
  }
  attacher_.start(
      {[this](pid_t pid, const TargetView& t, Process& proc, const std::stop_token& stop) {
         proc.who = t.identity.process;
         proc.target = t.id;
         scan_libraries(pid, proc, stop);
       },
       [this](pid_t pid, Process& gone) { release_process(pid, gone); },
       [this](const std::stop_token& stop) { recheck(stop); }, kRecheck,
       [this](const std::stop_token& stop) {
         if (host_libraries_) {
           probe_host_libraries(stop);
         }
       }});
}

void RadosCollector::sync_targets(const std::vector<TargetView>& targets) {
  if (skel_ == nullptr) {
    return;
  }
  attacher_.sync(
      targets, [](const TargetIdentity& t) { return t.kind == TargetKind::kRadosClient; },
      [this](pid_t pid, const TargetView& t) {
        owners_[pid] = t.id;  // its entries from before it was tracked are its target's from now
      });
}

void RadosCollector::release_process(pid_t pid, Process& gone) {
  const auto tgid = static_cast<std::uint32_t>(pid);
  carry_pending(tgid, gone.target);
  if (instance_labels_) {
    forget_pid(tgid);
  }
  release(gone.libs);
}

void RadosCollector::probe_host_libraries(const std::stop_token& stop) {
  for (const char* lib : rados::kLibraries) {
    for (const auto& dir : library_dirs()) {
      const std::string path = dir + "/" + lib;
      const auto inode = inode_of(path);
      if (!inode) {
        continue;
      }
      const auto functions = store_.for_binary(path, set_, stop);
      const auto markers = store_.for_binary(path, profile::markers_probe_set(lib), stop);
      const auto& any = functions.ok() ? functions : markers;
      if (!any.ok()) {
        spdlog::info("rados: host {}: no probe profile: {}", path, any.error().message);
        break;
      }
      const FileKey key{any->profile.build_id, *inode};
      std::vector<ProbeStatus> refused;
      std::string line;
      auto plan = rados::plan_library("host", lib, path, functions, markers, refused, line);
      if (libraries_.contains(key) || !plan) {
        break;  // no points: expected for the library whose Objecter clients do not call
      }
      std::error_code ec;
      const std::string real = std::filesystem::canonical(path, ec).filename().string();
      Library probed =
          probe_library("host", path, ec ? std::string(lib) : real, line, std::move(*plan));
      if (probed.links.empty()) {
        unplace(probed);
        break;
      }
      probed.host = true;
      std::lock_guard lock(mu_);
      libraries_.emplace(key, std::move(probed));
      break;
    }
  }
}

void RadosCollector::scan_libraries(pid_t pid, Process& proc, const std::stop_token& stop) {
  const std::size_t probes_before = probes_in(proc);
  const bool first = proc.seen.empty();
  for (const char* lib : rados::kLibraries) {
    if (proc.seen.contains(lib)) {
      continue;
    }
    const auto ident = profile::identify_module(pid, lib);
    if (!ident.ok() && ident.error().reason == "not_mapped") {
      continue;  // not (yet) loaded
    }
    proc.seen.insert(lib);
    if (!ident.ok()) {
      proc.refused.push_back({lib,
                              proc.who,
                              false,
                              {Reason::kBinaryRefused, "binary refused (" + ident.error().reason +
                                                           "): " + ident.error().message}});
      continue;
    }
    const FileKey key{ident->build_id, ident->inode};
    if (auto it = libraries_.find(key); it != libraries_.end()) {
      std::lock_guard lock(mu_);
      ++it->second.users;
      proc.libs.push_back(key);
      spdlog::info("rados: {} (pid {}): {}: {}", proc.who, pid, lib, it->second.profile_line);
      continue;
    }
    const auto functions = store_.for_module(*ident, set_, stop);
    const auto markers = store_.for_module(*ident, profile::markers_probe_set(lib), stop);
    std::string line;
    auto plan = rados::plan_library(proc.who, lib, ident->host_path, functions, markers,
                                    proc.refused, line);
    if (!plan) {
      continue;
    }
    Library probed = probe_library(proc.who + " (pid " + std::to_string(pid) + ")",
                                   ident->host_path, ident->name, line, std::move(*plan));
    spdlog::info("rados: {} (pid {}): {}: {}", proc.who, pid, lib, probed.profile_line);
    if (probed.links.empty()) {
      for (auto st : probed.status) {
        st.target = proc.who;
        proc.refused.push_back(std::move(st));
      }
      unplace(probed);
      continue;
    }
    probed.users = 1;
    proc.libs.push_back(key);
    std::lock_guard lock(mu_);
    libraries_.emplace(key, std::move(probed));
  }
  if (proc.libs.empty()) {
    for (const auto& st : proc.refused) {
      spdlog::warn("rados: {} (pid {}): {}: {}", proc.who, pid, st.probe, st.why.detail);
    }
  }
  const std::size_t probes = probes_in(proc);
  if (probes != probes_before || (first && probes == 0)) {
    spdlog::info("rados: {} (pid {}): {} probes attached", proc.who, pid, probes);
  }
}

std::size_t RadosCollector::probes_in(const Process& proc) const {
  std::size_t n = 0;
  for (const auto& key : proc.libs) {
    if (auto it = libraries_.find(key); it != libraries_.end()) {
      n += it->second.links.size();
    }
  }
  return n;
}

void RadosCollector::recheck(const std::stop_token& stop) {
  std::vector<std::pair<pid_t, Process>> todo;
  {
    std::lock_guard lock(mu_);
    for (const auto& [pid, p] : attacher_.attached()) {
      if (p.seen.size() < rados::kLibraries.size()) {
        Process copy;
        copy.who = p.who;
        copy.target = p.target;
        copy.seen = p.seen;
        copy.libs = p.libs;
        todo.emplace_back(pid, std::move(copy));
      }
    }
  }
  for (auto& [pid, found] : todo) {
    const std::size_t seen_before = found.seen.size();
    const std::size_t libs_before = found.libs.size();
    scan_libraries(pid, found, stop);
    if (found.seen.size() == seen_before) {
      continue;
    }
    const std::vector<FileKey> added(found.libs.begin() + static_cast<std::ptrdiff_t>(libs_before),
                                     found.libs.end());
    {
      std::lock_guard lock(mu_);
      auto it = attacher_.attached().find(pid);
      if (it != attacher_.attached().end()) {
        Process& p = it->second;
        p.seen = found.seen;
        if (!added.empty()) {
          p.refused.clear();
        }
        p.libs.insert(p.libs.end(), added.begin(), added.end());
        p.refused.insert(p.refused.end(), found.refused.begin(), found.refused.end());
        continue;
      }
    }
    release(added);  // gone meanwhile
  }
  sweep_pending();
}

RadosCollector::Library RadosCollector::probe_library(const std::string& who,
                                                      const std::string& path,
                                                      const std::string& name,
                                                      const std::string& profile_line,
                                                      rados::BuildPlan plan) {
  Library lib;
  lib.name = name;
  lib.profile_line = profile_line;
  if (!plan.missing_members.empty()) {
    spdlog::warn("rados: {} {}: members not resolved: {}", who, name, plan.missing_members);
  }
  lib.status = plan.unavailable;
  for (const auto& point : plan.points) {
    const std::uint32_t key =
        point.probe * RADOS_PAGE + static_cast<std::uint32_t>(point.offset & (RADOS_PAGE - 1));
    const auto refused = point.marker ? place(placed_sites_, sites_fd_, key, *point.marker)
                                      : place(placed_, layouts_fd_, key, plan.layout);
    if (refused) {
      spdlog::warn("rados: {} {}: {} not probed: {}", who, name, point.function, refused->detail);
      lib.status.push_back({point.function, "", false, *refused});
      continue;
    }
    (point.marker ? lib.site_keys : lib.keys).push_back(key);
    auto* prog = bpf_object__find_program_by_name(skel_->obj, point.program.c_str());
    // the kernel raises a marker's semaphore in each process while the probe is in it
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = point.semaphore_offset);
    // pid -1: every process that maps the file, from the moment it maps it
    bpf_link* link = bpf_program__attach_uprobe_opts(prog, -1, path.c_str(), point.offset, &opts);
    if (link == nullptr) {
      const int err = errno;
      const Cause why{reason_of_errno(err, Reason::kAttachFailed),
                      std::string("attach failed: ") + std::strerror(err)};
      spdlog::warn("rados: {} {}: {} {}", who, name, point.function, why.detail);
      lib.status.push_back({point.function, "", false, why});
      continue;
    }
    lib.links.emplace_back(link);
    lib.status.push_back({point.function, "", true, {}});
  }
  if (who == "host") {
    spdlog::info("rados: host {} ({}): {} probes attached, {}", name, path, lib.links.size(),
                 lib.profile_line);
  }
  return lib;
}

void RadosCollector::release(const std::vector<FileKey>& libs) {
  std::vector<Library> gone;
  {
    std::lock_guard lock(mu_);
    for (const auto& key : libs) {
      auto it = libraries_.find(key);
      if (it == libraries_.end() || --it->second.users > 0 || it->second.host) {
        continue;
      }
      gone.push_back(std::move(it->second));
      libraries_.erase(it);
    }
  }
  for (auto& lib : gone) {
    lib.links.clear();  // the slow part, outside the lock
    unplace(lib);
  }
}

void RadosCollector::unplace(const Library& lib) {
  cephscope::unplace(placed_, layouts_fd_, lib.keys, /*hash=*/false);
  cephscope::unplace(placed_sites_, sites_fd_, lib.site_keys, /*hash=*/true);
}

RadosCollector::SeriesKey RadosCollector::series_key(const rados_stats_key& k,
                                                     std::uint32_t target) const {
  std::string image(k.image, strnlen(k.image, sizeof(k.image)));
  // An untracked client's entries carry its pid whatever the labels: it is a label only with
  // instance labels, and not beside an image.
  const std::uint32_t pid =
      k.target != CEPHSCOPE_UNTRACKED || (instance_labels_ && image.empty()) ? k.pid : 0;
  return {target, k.pool, k.op, pid, std::move(image)};
}

void RadosCollector::carry_pending(std::uint32_t pid, std::uint32_t target) {
  const auto lock = maps_lock();
  std::size_t found = 0;
  Status walked = for_each_percpu<rados_stats_key, rados_stats>(
      stats_fd_, [&](const rados_stats_key& k, std::span<const rados_stats> cpus) {
        if (k.target != CEPHSCOPE_UNTRACKED || k.pid != pid) {
          return;
        }
        ++found;
        auto& s = carried_[series_key(k, target)];
        for (const auto& c : cpus) {
          add_stats(s, c);
        }
      });
  if (!walked.ok()) {
    spdlog::warn("rados: ops of pid {} from before it was tracked not kept: {}", pid,
                 walked.error().message);
  }
  if (found > 0) {
    auto gone = prune_keys<rados_stats_key>(stats_fd_, [&](const rados_stats_key& k) {
      return k.target != CEPHSCOPE_UNTRACKED || k.pid != pid;
    });
    if (!gone.ok()) {
      spdlog::warn("rados: entries of pid {} not deleted: {}", pid, gone.error().message);
    }
  }
  std::lock_guard owners(mu_);
  owners_.erase(static_cast<pid_t>(pid));
}

void RadosCollector::sweep_pending() {
  const auto lock = maps_lock();
  std::set<std::uint32_t> pids;
  Status walked = for_each_percpu<rados_stats_key, rados_stats>(
      stats_fd_, [&](const rados_stats_key& k, std::span<const rados_stats> /*cpus*/) {
        if (k.target == CEPHSCOPE_UNTRACKED) {
          pids.insert(k.pid);
        }
      });
  if (!walked.ok() || pids.empty()) {
    return;
  }
  {
    std::lock_guard owners(mu_);
    std::erase_if(pids, [&](std::uint32_t pid) {
      const auto p = static_cast<pid_t>(pid);
      return owners_.contains(p) || attacher_.attaching(p) || ::kill(p, 0) == 0 || errno != ESRCH;
    });
  }
  if (pids.empty()) {
    return;
  }
  auto gone = prune_keys<rados_stats_key>(stats_fd_, [&](const rados_stats_key& k) {
    return k.target != CEPHSCOPE_UNTRACKED || !pids.contains(k.pid);
  });
  if (gone.ok()) {
    spdlog::debug("rados: {} entries of {} processes that exited untracked deleted", *gone,
                  pids.size());
  }
}

void RadosCollector::forget_pid(std::uint32_t pid) {
  const auto lock = maps_lock();
  auto gone = prune_keys<rados_stats_key>(stats_fd_,
                                          [&](const rados_stats_key& k) { return k.pid != pid; });
  if (!gone.ok()) {
    spdlog::warn("rados: series of pid {} not deleted: {}", pid, gone.error().message);
  }
  std::erase_if(carried_, [&](const auto& entry) { return std::get<3>(entry.first) == pid; });
}

void RadosCollector::take_record(const rados_slow_record& r) {
  std::string process;
  {
    std::lock_guard lock(mu_);
    auto it = attacher_.attached().find(static_cast<pid_t>(r.tgid));
    if (it == attacher_.attached().end()) {
      return;  // its process is being detached
    }
    process = it->second.who;
  }
  SlowOp op = rados::to_slow_op(r, process);
  if (r.exemplar != 0) {
    slow_ops_->count_exemplar_record();
  }
  if (r.exemplar != 0 && !op.trace_id.empty()) {
    exemplars_.offer(series_key(r.key, r.key.target), op, r.interval, op.slow);
  }
  if (!op.slow) {
    return;
  }
  spdlog::info(
      "rados: slow client op in {} (pid {}): {} {} took {:.3f} s; pool {}, pg {}, osd {}, "
      "object \"{}\"{}, {} resends{}{}",
      op.process, op.pid, op.op,
      op.request_id.empty() ? fmt::format("tid {}", op.tid) : op.request_id, op.seconds,
      op.pool ? std::to_string(*op.pool) : "unknown", op.pg.empty() ? "unknown" : op.pg,
      op.acting_osd ? std::to_string(*op.acting_osd) : "unknown", printable(op.object),
      op.object_truncated ? "..." : "", op.resends, op.error.empty() ? "" : ", error ", op.error);
  slow_ops_->add(std::move(op));
}

// One status per probe and target: a target (a process name) can have several processes;
// the probe counts as attached when it is in all of them.
std::vector<ProbeStatus> RadosCollector::probes() const {
  auto out = BpfCollector::probes();
  std::lock_guard lock(mu_);
  ProbeStatusMerge merged;
  for (const auto& [pid, proc] : attacher_.attached()) {
    if (proc.libs.empty()) {
      for (const ProbeStatus& st : proc.refused) {
        merged.add(st);
      }
      continue;
    }
    for (const auto& key : proc.libs) {
      auto it = libraries_.find(key);
      if (it == libraries_.end()) {
        continue;
      }
      for (ProbeStatus st : it->second.status) {
        st.target = proc.who;
        merged.add(std::move(st));
      }
    }
  }
  merged.append_to(out);
  return out;
}

Status RadosCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  if (stats_fd_ < 0) {
    return ok_status();
  }
  std::map<pid_t, std::uint32_t> owners;
  {
    std::lock_guard lock(mu_);
    owners = owners_;
  }
  std::map<SeriesKey, rados_stats> sums = carried_;
  Status walked = for_each_percpu<rados_stats_key, rados_stats>(
      stats_fd_, [&](const rados_stats_key& k, std::span<const rados_stats> cpus) {
        std::uint32_t target = k.target;
        if (target == CEPHSCOPE_UNTRACKED) {
          // folded before the client was tracked: its target's once the collector has it
          auto owner = owners.find(static_cast<pid_t>(k.pid));
          if (owner == owners.end()) {
            return;
          }
          target = owner->second;
        }
        auto& s = sums[series_key(k, target)];
        for (const auto& c : cpus) {
          add_stats(s, c);
        }
      });
  if (!walked.ok()) {
    return walked;
  }
  std::map<std::pair<std::uint32_t, bool>, std::uint64_t> bytes;
  for (const auto& [key, s] : sums) {
    const auto& [target, pool, op, pid, image] = key;
    auto labels = targets.find(target);
    if (labels == targets.end() || op >= RADOS_OP_COUNT) {
      continue;
    }
    const auto exemplar = exemplars_.exported(key, slow_ops_);
    rados::put_client_series(out, labels->second, {pool, op, pid, image}, s, buckets_,
                             exemplar ? &*exemplar : nullptr);
    if (op != RADOS_OP_OTHER) {
      bytes[{target, op == RADOS_OP_READ}] += s.bytes;
    }
  }
  if (slow_ops_ != nullptr) {  // the next scrape's exemplars: the slowest ops from now on
    skel_->bss->exemplar_interval = next_exemplar_interval(skel_->bss->exemplar_interval);
  }
  for (const auto& [key, n] : bytes) {
    rados::put_client_bytes(out, targets.at(key.first), key.second, n);
  }
  return ok_status();
}

}  // namespace

std::unique_ptr<Collector> make_rados_collector(const CollectorContext& ctx) {
  return std::make_unique<RadosCollector>(ctx);
}

}  // namespace cephscope
