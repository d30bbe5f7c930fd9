// osd collector: per-op stage latency in every ceph-osd of the host, from uprobes attached per
// OSD process at offsets of its build's probe profile. See docs/collectors/osd.md.
#include "collectors/collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "bpf/osd.h"
#include "collectors/bpf_collector.h"
#include "collectors/layout_table.h"
#include "collectors/osd/osd_bluestore.h"
#include "collectors/osd/osd_detail.h"
#include "collectors/osd/osd_detail_control.h"
#include "collectors/osd/osd_probes.h"
#include "collectors/osd/osd_records.h"
#include "collectors/osd/osd_series.h"
#include "collectors/osd/osd_stats_slots.h"
#include "collectors/process_attacher.h"
#include "core/hist.h"
#include "libbpf/maps.h"
#include "osd.skel.h"
#include "profile/store.h"

namespace cephscope {
namespace {

using osd::kStages;

using OsdSkel = Skeleton<osd_bpf, osd_bpf__destroy>;

DetailSettings detail_settings(const Config::Collectors& c) {
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  DetailSettings s;
  s.window = std::max(seconds(1), duration_cast<seconds>(c.osd_detail_window));
  s.min_interval = duration_cast<seconds>(c.osd_detail_min_interval);
  s.p99_bound_seconds = std::chrono::duration<double>(c.osd_detail_p99_bound).count();
  return s;
}

// How often the OSDs' totals are read for the automatic windows' triggers.
constexpr auto kDetailCheck = std::chrono::seconds(5);

class OsdCollector final : public BpfCollector {
 public:
  explicit OsdCollector(const CollectorContext& ctx)
      : store_(store_options(ctx.config.profiles)),
        set_(osd::probe_set()),
        store_set_(osd::store_probe_set()),
        windows_(detail_settings(ctx.config.collectors)) {
    start(ctx);
  }
  OsdCollector(const OsdCollector&) = delete;
  OsdCollector& operator=(const OsdCollector&) = delete;
  OsdCollector(OsdCollector&&) = delete;
  OsdCollector& operator=(OsdCollector&&) = delete;
  ~OsdCollector() override {
    if (control_ != nullptr) {
      control_->set(nullptr);  // no request reaches the collector from here on
    }
    records_.reset();  // its thread reads the attached processes
    attacher_.stop();  // before the processes and the object go
  }
  [[nodiscard]] const char* name() const override { return "osd"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;
  void sync_targets(const std::vector<TargetView>& targets) override;
  void refresh(Clock::time_point now) override;
  [[nodiscard]] std::vector<ProbeStatus> probes() const override;

 private:
  // The probes of one OSD process; links detach when it goes.
  struct Process {
    std::string who;   // ceph_daemon
    std::string fsid;  // its cluster, when known: osd.N is per cluster
    std::uint32_t target = 0;
    std::string binary;  // the host path its uprobes go on
    osd::BuildPlan plan;
    std::vector<Link> links;
    std::vector<Link> detail_links;       // tier 2 while a window is open (detail: auto)
    std::set<std::string> attached;       // programs attached
    std::map<std::string, Cause> failed;  // programs whose attach failed, and why
    std::vector<ProbeStatus> status;
    std::array<Cause, OSD_STAGE_COUNT> stage_gaps;  // ok when the stage works
    osd::StorePlan store;                           // the bluestore layer (its own profile)
    Cause store_gap;                                // ok when the layer is measured
  };

  void start(const CollectorContext& ctx);
  [[nodiscard]] Status for_each_series(const OsdStatsSlots::SeriesFn& fn) const;
  void prune_maps(const TargetIds& live) override;
  // An OSD process that went: its layout, links and stats slot given back.
  void release_process(pid_t pid, Process& gone);
  void attach_process(const TargetView& target, pid_t pid, Process& proc,
                      const std::stop_token& stop);
  // Attaches one probe point in PROC; its status and link go to PROC.
  void attach_point(pid_t pid, Process& proc, const osd::ProbePoint& point,
                    std::vector<Link>& into);
  std::vector<Link> set_detail(pid_t pid, Process& proc, bool on);
  void statuses(Process& proc) const;
  void check_windows(Clock::time_point now);
  void queue_detail(const OsdId& osd, bool on);  // under mu_
  std::pair<int, std::string> request_detail(const std::string& who, const std::string& fsid);
  void detail_status(MetricSink& out) const;
  [[nodiscard]] Status last_replicas(MetricSink& out, const TargetLabelMap& targets) const;
  void stage_status(MetricSink& out) const;
  void plan_store(const profile::ModuleIdentity& module, Process& proc,
                  const std::stop_token& stop);
  [[nodiscard]] Status store_layer(MetricSink& out, const TargetLabelMap& targets) const;
  void start_records(SlowOpLog* log);

  profile::ProfileStore store_;  // the worker's
  profile::ProbeSet set_;
  profile::ProbeSet store_set_;  // the bluestore layer's
  osd_bpf* skel_ = nullptr;      // owned by the base (adopt)
  int stats_fd_ = -1;
  int last_replica_fd_ = -1;
  int store_fd_ = -1;
  std::unique_ptr<LayoutTable<osd_layout>> layouts_;
  std::unique_ptr<OsdStatsSlots> slots_;
  DetailMode mode_ = DetailMode::kNever;  // collectors.osd.detail
  bool store_layer_on_ = true;            // collectors.osd.bluestore_layer
  DetailWindows windows_;                 // guarded by mu_
  Clock::time_point next_check_{};
  Buckets whole_buckets_ = Buckets::kFull;
  Buckets stage_buckets_ = Buckets::kCoarse;

  mutable std::mutex mu_;  // guards the members below and the attacher's processes

  OsdDetailControl* control_ = nullptr;
  SlowOpLog* slow_ops_ = nullptr;
  OsdExemplars exemplars_;
  std::unique_ptr<SlowOpReader> records_;
  ProcessAttacher<Process> attacher_{mu_};  // last: stops first
};

// Every series: the hash's, and those of the stats slots (osd_stats_slots.h).
Status OsdCollector::for_each_series(const OsdStatsSlots::SeriesFn& fn) const {
  if (Status walked = for_each_percpu<osd_stats_key, osd_stats>(stats_fd_, fn); !walked.ok()) {
    return walked;
  }
  return slots_->for_each(fn);
}

void OsdCollector::prune_maps(const TargetIds& live) {
  BpfCollector::prune_maps(live);
  if (slots_) {
    slots_->prune(live);
  }
  exemplars_.erase_if([&](const OsdSeriesId& id) { return !live.contains(std::get<0>(id)); });
}

void OsdCollector::start(const CollectorContext& ctx) {
  // Every probe the collector can attach (fallbacks aside), for the "unavailable" statuses.
  std::vector<std::string> all;
  for (const auto& u : osd::kUprobes) {
    if (u.instead_of == nullptr) {
      all.emplace_back(u.label);
    }
  }
  for (const auto& p : osd::kStoreProbes) {
    all.emplace_back(p.function);
  }
  OsdSkel skel;
  if (auto opened = open_skeleton(skel, osd_bpf__open, ctx); !opened.ok()) {
    unavailable(cause_of(opened.error(), Reason::kLoadFailed), all);
    return;
  }
  // Benchmarks only: 1..4 stop the end-of-op programs early (bpf/osd_events.bpf.h), so that
  // tests/bench/osd-build-pair.sh splits a hit's cost.
  skel->rodata->bench_cut = bench_cut("osd", "CEPHSCOPE_BENCH_OSD_CUT", 4);
  if (auto loaded = load_skeleton(skel, osd_bpf__load); !loaded.ok()) {
    unavailable(cause_of(loaded.error(), Reason::kLoadFailed), all);
    return;
  }
  mode_ = ctx.config.collectors.osd_detail;
  store_layer_on_ = ctx.config.collectors.osd_bluestore_layer;
  // The whole op keeps every bucket; each stage, every other (docs/metrics.md#series-budget).
  whole_buckets_ = buckets_setting(ctx.config.collectors.osd.buckets, Buckets::kFull);
  stage_buckets_ = buckets_setting(ctx.config.collectors.osd.buckets, Buckets::kCoarse);
  skel->bss->rt_off_ns = realtime_offset_ns();
  skel->bss->slow_ns = static_cast<std::uint64_t>(
      std::chrono::nanoseconds(ctx.config.collectors.osd_slow_op_threshold).count());
  stats_fd_ = bpf_map__fd(skel->maps.osd_stats);
  prune_by_target<osd_stats_key>(stats_fd_);
  last_replica_fd_ = bpf_map__fd(skel->maps.osd_last_replica);
  prune_by_target<osd_last_replica_key>(last_replica_fd_);
  store_fd_ = bpf_map__fd(skel->maps.osd_bs_bytes);
  prune_by_target<osd_bs_key>(store_fd_);
  slots_ = std::make_unique<OsdStatsSlots>(bpf_map__fd(skel->maps.osd_stats_slots),
                                           bpf_map__fd(skel->maps.osd_bs_slots));
  layouts_ = std::make_unique<LayoutTable<osd_layout>>(bpf_map__fd(skel->maps.osd_layout_slots),
                                                       bpf_map__fd(skel->maps.osd_layouts),
                                                       OSD_LAYOUTS_MAX);
  skel_ = skel.release();
  osd_bpf* raw = skel_;
  adopt(
      raw->obj, [raw] { osd_bpf__destroy(raw); }, "uprobe");
  store_.load_shipped();
  start_records(ctx.slow_ops);
  attacher_.start({[this](pid_t pid, const TargetView& t, Process& proc,
                          const std::stop_token& stop) { attach_process(t, pid, proc, stop); },
                   [this](pid_t pid, Process& gone) { release_process(pid, gone); }, nullptr,
                   std::chrono::milliseconds{0}, nullptr});
  if (ctx.detail_control != nullptr) {
    control_ = ctx.detail_control;
    control_->set([this](const std::string& who, const std::string& fsid) {
      return request_detail(who, fsid);
    });
  }
}

void OsdCollector::start_records(SlowOpLog* log) {
  if (log == nullptr) {
    return;
  }
  slow_ops_ = log;
  skel_->bss->exemplar_interval = next_exemplar_interval(0);
  records_ = SlowOpReader::start(
      bpf_map__fd(skel_->maps.osd_records), *log, exemplars_,
      [this](std::uint32_t tgid) -> std::optional<std::pair<std::string, std::string>> {
        std::lock_guard lock(mu_);
        auto it = attacher_.attached().find(static_cast<pid_t>(tgid));
        if (it == attacher_.attached().end()) {
          return std::nullopt;
        }
        return std::pair{it->second.who, it->second.fsid};
      });
}

void OsdCollector::sync_targets(const std::vector<TargetView>& targets) {
  if (skel_ == nullptr) {
    return;
  }
  attacher_.sync(targets, [](const TargetIdentity& t) { return t.kind == TargetKind::kCephOsd; });
}

void OsdCollector::refresh(Clock::time_point now) {
  if (skel_ == nullptr) {
    return;
  }
  skel_->bss->rt_off_ns = realtime_offset_ns();
  if (mode_ == DetailMode::kAuto) {
    check_windows(now);
  }
}

// detail: auto: every kDetailCheck, each OSD's own totals may open a window; windows that ran
// their time are closed, or run another while their OSD is still slow.
void OsdCollector::check_windows(Clock::time_point now) {
  std::map<std::uint32_t, OsdTotals> totals;  // by target
  const bool check = now >= next_check_;
  if (check) {
    next_check_ = now + kDetailCheck;
    const Status walked =
        for_each_series([&](const osd_stats_key& k, std::span<const osd_stats> cpus) {
          OsdTotals& t = totals[k.target];
          for (const auto& c : cpus) {
            if (k.kind == OSD_KIND_OP) {
              add_hist(t.ops, stage_hist(c, OSD_STAGE_WHOLE));
              add_hist(t.replication, stage_hist(c, OSD_STAGE_REPLICATION));
              // a slow op counts under its longest stage: replication is a replica's time
              t.own_slow += c.slow[OSD_STAGE_WHOLE] - c.slow[OSD_STAGE_REPLICATION];
            } else if (k.kind == OSD_KIND_SUBOP) {
              add_hist(t.subops, stage_hist(c, OSD_STAGE_WHOLE));
              t.own_slow += c.slow[OSD_STAGE_WHOLE];
            }
          }
        });
    if (!walked.ok()) {
      spdlog::warn("osd: detail windows: {}", walked.error().message);
    }
  }
  std::lock_guard lock(mu_);
  if (check) {
    std::map<std::uint32_t, OsdId> osds;
    for (const auto& [pid, proc] : attacher_.attached()) {
      osds.try_emplace(proc.target, OsdId{proc.who, proc.fsid});
    }
    for (const auto& [target, id] : osds) {
      const auto t = totals.find(target);
      const auto trigger = windows_.observe(id, now, t == totals.end() ? OsdTotals{} : t->second);
      if (trigger) {
        spdlog::info("osd: {}: detail window opened ({})", id.first, *trigger);
        queue_detail(id, true);
      }
    }
  }
  for (const auto& id : windows_.expire(now)) {
    queue_detail(id, false);
  }
}

void OsdCollector::queue_detail(const OsdId& osd, bool on) {
  for (const auto& [pid, proc] : attacher_.attached()) {
    if (!attacher_.leaving(pid) && proc.who == osd.first && proc.fsid == osd.second) {
      attacher_.post(pid,
                     [this, on](pid_t p, Process& target) { return set_detail(p, target, on); });
    }
  }
}

// POST /debug/osd-detail?ceph_daemon=osd.N[&fsid=F]: a window on that OSD, now.
std::pair<int, std::string> OsdCollector::request_detail(const std::string& who,
                                                         const std::string& fsid) {
  std::lock_guard lock(mu_);
  std::set<OsdId> matches;
  for (const auto& [pid, proc] : attacher_.attached()) {
    if (!attacher_.leaving(pid) && proc.who == who && (fsid.empty() || proc.fsid == fsid)) {
      matches.insert({proc.who, proc.fsid});
    }
  }
  auto [reply, opened] = detail_request_reply(mode_, windows_, matches, who, fsid);
  if (opened) {
    queue_detail(*opened, true);
  }
  return reply;
}
// When tier 2 ran: per OSD, a window open now, and windows opened by trigger.
void OsdCollector::detail_status(MetricSink& out) const {
  std::set<OsdId> osds;
  std::lock_guard lock(mu_);
  for (const auto& [pid, proc] : attacher_.attached()) {
    osds.insert({proc.who, proc.fsid});
  }
  write_detail_status(out, mode_, windows_, osds);
}

void OsdCollector::release_process(pid_t pid, Process& gone) {
  if (auto erased = layouts_->erase(static_cast<std::uint32_t>(pid)); !erased.ok()) {
    spdlog::warn("osd: {} (pid {}): {}", gone.who, pid, erased.error().message);
  }
  gone.links.clear();  // the slow part, outside the lock
  gone.detail_links.clear();
  if (auto kept = slots_->release(gone.plan.layout.stats_slot); !kept.ok()) {
    spdlog::warn("osd: {} (pid {}): stats slot: {}", gone.who, pid, kept.error().message);
  }
}

void OsdCollector::attach_process(const TargetView& target, pid_t pid, Process& proc,
                                  const std::stop_token& stop) {
  proc.who = target.identity.ceph_daemon;
  proc.fsid = target.identity.fsid;
  const std::string& who = proc.who;
  auto fail_all = [&](const Cause& why) {
    spdlog::warn("osd: {} (pid {}): {}: {}", who, pid, to_string(why.reason), why.detail);
    proc.status.push_back({"ceph-osd", who, false, why});
    proc.stage_gaps.fill(why);
    proc.store_gap = why;
  };
  const auto ident = profile::identify_module(pid, "");
  if (!ident.ok()) {
    fail_all({Reason::kBinaryRefused,
              "binary refused (" + ident.error().reason + "): " + ident.error().message});
    return;
  }
  const auto& module = *ident;
  auto loaded = store_.for_module(module, set_, stop);
  if (!loaded.ok()) {
    fail_all({reason_of(loaded.error(), Reason::kProfileUnavailable),
              "no probe profile: " + loaded.error().message});
    return;
  }
  const auto& prof = loaded->profile;
  // A profile from the container's own files steers a probe only where this binary agrees.
  std::optional<profile::OffsetVerifier> verifier;
  if (loaded->from_target_files) {
    auto opened = profile::OffsetVerifier::open(module.host_path);
    if (!opened.ok()) {
      fail_all({Reason::kOffsetUnverified,
                "profile from the container's files not checked: " + opened.error().message});
      return;
    }
    verifier = std::move(opened).value();
    spdlog::info(
        "osd: {} (pid {}): profile made from the container's files: its offsets are checked "
        "against {} ({} symbol and {} .eh_frame function starts)",
        who, pid, module.host_path, verifier->symbol_starts(), verifier->fde_starts());
  }
  const osd::BuildPlan plan =
      osd::plan_for(prof, who, mode_ != DetailMode::kNever, verifier ? &*verifier : nullptr);
  if (!plan.missing_members.empty()) {
    spdlog::warn("osd: {} build {}: members not resolved ({}): {}", who, prof.build_id, prof.source,
                 plan.missing_members);
  }
  if (!plan.io_done.ok()) {
    spdlog::warn("osd: {} build {}: {}", who, prof.build_id, plan.io_done.detail);
  }
  proc.target = target.id;
  proc.binary = module.host_path;
  proc.plan = plan;
  proc.plan.layout.target = target.id;
  proc.plan.layout.detail = mode_ == DetailMode::kAlways ? 1 : 0;
  if (auto slot = slots_->take(target.id); slot.ok()) {
    proc.plan.layout.stats_slot = *slot;  // 0: none free, its series go to the hash
  } else {
    spdlog::warn("osd: {} (pid {}): its series go to the hash: {}", who, pid, slot.error().message);
  }
  plan_store(module, proc, stop);
  if (auto stored = layouts_->put(static_cast<std::uint32_t>(pid), proc.plan.layout);
      !stored.ok()) {
    fail_all({Reason::kInternal, stored.error().message});
    return;
  }
  for (const auto& point : proc.store.points) {
    attach_point(pid, proc, point, proc.links);
  }
  for (const auto& st : plan.unavailable) {
    spdlog::warn("osd: {} build {}: {} not placed ({}): {}", who, prof.build_id, st.probe,
                 to_string(st.why.reason), st.why.detail);
  }
  for (const auto& point : plan.points) {
    if (!point.detail || mode_ == DetailMode::kAlways) {  // auto: tier 2 waits for a window
      attach_point(pid, proc, point, proc.links);
    }
  }
  statuses(proc);
  spdlog::info("osd: {} (pid {}): {} of {} probes attached, profile {} ({}){}{}", who, pid,
               proc.links.size(),
               plan.points.size() + plan.unavailable.size() + proc.store.points.size() +
                   proc.store.unavailable.size(),
               prof.build_id, profile::to_string(loaded->origin),
               loaded->location.empty() ? "" : " from ", loaded->location);
}

void OsdCollector::attach_point(pid_t pid, Process& proc, const osd::ProbePoint& point,
                                std::vector<Link>& into) {
  auto* prog = bpf_object__find_program_by_name(skel_->obj, point.program.c_str());
  LIBBPF_OPTS(bpf_uprobe_opts, opts);
  bpf_link* link =
      bpf_program__attach_uprobe_opts(prog, pid, proc.binary.c_str(), point.offset, &opts);
  if (link == nullptr) {
    const int err = errno;
    const Cause why{reason_of_errno(err, Reason::kAttachFailed),
                    std::string("attach failed: ") + std::strerror(err)};
    spdlog::warn("osd: {} (pid {}): {} {}", proc.who, pid, point.function, why.detail);
    proc.failed[point.program] = why;
    return;
  }
  into.emplace_back(link);
  proc.failed.erase(point.program);
  proc.attached.insert(point.program);
}

// Probe statuses and stage gaps from what is attached now; tier 2 outside a window is off.
void OsdCollector::statuses(Process& proc) const {
  const Cause resting{Reason::kDisabled,
                      "tier 2 attaches in detail windows (collectors.osd.detail: auto); none "
                      "is open"};
  proc.status = proc.plan.unavailable;
  for (const auto& point : proc.plan.points) {
    if (proc.attached.contains(point.program)) {
      proc.status.push_back({point.function, proc.who, true, {}});
    } else if (auto f = proc.failed.find(point.program); f != proc.failed.end()) {
      proc.status.push_back({point.function, proc.who, false, f->second});
    } else if (point.detail) {
      proc.status.push_back({point.function, proc.who, false, resting});
    }
  }
  proc.stage_gaps = osd::stage_gaps(proc.plan, proc.attached);
  for (const auto& st : proc.store.unavailable) {
    proc.status.push_back(st);
  }
  for (const auto& point : proc.store.points) {
    if (proc.attached.contains(point.program)) {
      proc.status.push_back({point.function, proc.who, true, {}});
    } else if (auto f = proc.failed.find(point.program); f != proc.failed.end()) {
      proc.status.push_back({point.function, proc.who, false, f->second});
    }
  }
  proc.store_gap = osd::store_gap(proc.store, proc.attached);
  if (mode_ == DetailMode::kAuto && proc.detail_links.empty()) {
    for (int s = OSD_STAGE_BS_PREPARE; s <= OSD_STAGE_BS_KV_COMMIT; ++s) {
      if (proc.stage_gaps[s].reason == Reason::kProbeNotAttached) {
        proc.stage_gaps[s] = resting;
      }
    }
  }
}

// Opens (attaches tier 2, then lets the programs join ops to transactions) or closes (the
// other way round) a detail window in one OSD process. Called by the worker under mu_.
std::vector<Link> OsdCollector::set_detail(pid_t pid, Process& proc, bool on) {
  const auto tgid = static_cast<std::uint32_t>(pid);
  if (on && proc.detail_links.empty()) {
    for (const auto& point : proc.plan.points) {
      if (point.detail) {
        attach_point(pid, proc, point, proc.detail_links);
      }
    }
  }
  proc.plan.layout.detail = on && !proc.detail_links.empty() ? 1 : 0;
  if (auto stored = layouts_->put(tgid, proc.plan.layout); !stored.ok()) {
    spdlog::warn("osd: {} (pid {}): layout not updated: {}", proc.who, pid, stored.error().message);
  }
  std::vector<Link> off;
  if (!on) {
    off.swap(proc.detail_links);
    for (const auto& point : proc.plan.points) {
      if (point.detail) {
        proc.attached.erase(point.program);
      }
    }
  }
  statuses(proc);
  spdlog::info("osd: {} (pid {}): detail window {}", proc.who, pid, on ? "opened" : "closed");
  return off;  // detached by the caller, outside the lock (about 100 ms per uprobe)
}

// One status per probe and target: a target (osd.N of a cluster) can have several processes
// (a daemonising ceph-osd); the probe counts as attached when it is in all of them.
std::vector<ProbeStatus> OsdCollector::probes() const {
  auto out = BpfCollector::probes();
  std::lock_guard lock(mu_);
  ProbeStatusMerge merged;
  for (const auto& [pid, proc] : attacher_.attached()) {
    for (ProbeStatus st : proc.status) {
      st.fsid = proc.fsid;
      merged.add(std::move(st));
    }
  }
  merged.append_to(out);
  return out;
}

// The bluestore layer of one process, from the build's bluestore-io profile (its own set:
// the osd-stages profile, shipped or cached, is not touched by it).
void OsdCollector::plan_store(const profile::ModuleIdentity& module, Process& proc,
                              const std::stop_token& stop) {
  if (!store_layer_on_) {
    proc.store = osd::store_unavailable(
        proc.who, {Reason::kDisabled, "turned off (collectors.osd.bluestore_layer: false)"});
    return;
  }
  auto loaded = store_.for_module(module, store_set_, stop);
  if (!loaded.ok()) {
    proc.store = osd::store_unavailable(
        proc.who, {reason_of(loaded.error(), Reason::kProfileUnavailable),
                   std::string("no ") + osd::kStoreSet + " profile: " + loaded.error().message});
  } else if (!loaded->from_target_files) {
    proc.store = osd::plan_store(loaded->profile, proc.who, proc.plan.layout);
  } else if (auto verifier = profile::OffsetVerifier::open(module.host_path); verifier.ok()) {
    proc.store = osd::plan_store(loaded->profile, proc.who, proc.plan.layout, &*verifier);
  } else {
    proc.store = osd::store_unavailable(
        proc.who, {Reason::kOffsetUnverified,
                   "profile from the container's files not checked: " + verifier.error().message});
  }
  if (!proc.store.why.ok()) {
    spdlog::warn("osd: {}: bluestore layer unavailable ({}): {}", proc.who,
                 to_string(proc.store.why.reason), proc.store.why.detail);
  }
}

// The bluestore layer: bytes and device writes per OSD and kind, and whether each OSD has it.
Status OsdCollector::store_layer(MetricSink& out, const TargetLabelMap& targets) const {
  {
    std::map<std::pair<std::string, std::string>, Cause> gaps;  // a target's worst process
    std::lock_guard lock(mu_);
    for (const auto& [pid, proc] : attacher_.attached()) {
      auto [it, fresh] = gaps.try_emplace({proc.who, proc.fsid}, proc.store_gap);
      if (!fresh && it->second.ok()) {
        it->second = proc.store_gap;
      }
    }
    for (const auto& [id, gap] : gaps) {
      osd::put_store_status(out, {{"ceph_daemon", id.first}, {"fsid", id.second}}, gap);
    }
  }
  return osd::put_store_layer(out, targets, store_fd_, *slots_);
}

// 1 per OSD and stage when the stage is measured, else 0 with the reason; a target with
// several processes (a daemonising ceph-osd) shows a stage as working only if it is in all.
void OsdCollector::stage_status(MetricSink& out) const {
  std::map<std::tuple<std::string, std::string, int>, Cause> gaps;
  std::lock_guard lock(mu_);
  for (const auto& [pid, proc] : attacher_.attached()) {
    for (int s = 0; s < OSD_STAGE_COUNT; ++s) {
      auto [it, fresh] = gaps.try_emplace({proc.who, proc.fsid, s}, proc.stage_gaps[s]);
      if (!fresh && it->second.ok()) {
        it->second = proc.stage_gaps[s];
      }
    }
  }
  for (const auto& [key, gap] : gaps) {
    out.gauge("cephscope_osd_stage_available",
              "1 when the OSD stage is measured in this OSD's build; reason says why not.",
              {{"ceph_daemon", std::get<0>(key)},
               {"fsid", std::get<1>(key)},
               {"stage", kStages[std::get<2>(key)]},
               {"reason", std::string(to_string(gap.reason))}},
              gap.ok() ? 1 : 0);
  }
}

Status OsdCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  if (stats_fd_ < 0) {
    return ok_status();
  }
  stage_status(out);
  detail_status(out);
  // The bluestore layer's maps apart: a failure to read them is reported, not the stages' loss.
  const Status layer = store_layer(out, targets);
  std::map<std::tuple<std::uint32_t, int, int>, osd_stats> sums;
  Status walked = for_each_series([&](const osd_stats_key& k, std::span<const osd_stats> cpus) {
    auto& s = sums[{k.target, k.kind, k.op}];
    for (const auto& c : cpus) {
      add_stats(s, c);
    }
  });
  if (!walked.ok()) {
    return walked;
  }

  std::map<std::pair<std::uint32_t, int>, std::pair<std::uint64_t, std::uint64_t>> bytes;
  for (const auto& [key, s] : sums) {
    const auto [target, kind, op] = key;
    if (auto labels = targets.find(target); labels != targets.end() && op < OSD_OP_COUNT) {
      const auto exemplar = exemplars_.exported(key, slow_ops_);
      put_osd_series(out, labels->second, kind, op, s, whole_buckets_, stage_buckets_,
                     exemplar ? &*exemplar : nullptr);
      auto& [in, sent] = bytes[{target, kind}];
      in += s.bytes_in;
      sent += s.bytes_out;
    }
  }
  // one series per target and layer: each op class's bytes are the layer's
  for (const auto& [key, n] : bytes) {
    put_layer_bytes(out, targets.at(key.first), key.second, n.first, n.second);
  }
  if (slow_ops_ != nullptr) {  // the next scrape's exemplars: the slowest ops from now on
    skel_->bss->exemplar_interval = next_exemplar_interval(skel_->bss->exemplar_interval);
  }
  const Status replicas = last_replicas(out, targets);
  return layer.ok() ? replicas : layer;
}

// Tier 2: each OSD's replicated client writes by the replica whose commit reply came last.
Status OsdCollector::last_replicas(MetricSink& out, const TargetLabelMap& targets) const {
  std::map<std::pair<std::uint32_t, std::int32_t>, std::uint64_t> sums;
  Status walked = for_each_percpu<osd_last_replica_key, std::uint64_t>(
      last_replica_fd_, [&](const osd_last_replica_key& k, std::span<const std::uint64_t> cpus) {
        auto& n = sums[{k.target, k.replica}];
        for (const auto c : cpus) {
          n += c;
        }
      });
  if (!walked.ok()) {
    return walked;
  }
  for (const auto& [key, n] : sums) {
    const auto labels = targets.find(key.first);
    if (labels == targets.end() || key.second < 0) {
      continue;
    }
    out.counter("cephscope_osd_replica_last_total",
                "Replicated client writes on their primary whose last replica commit reply came "
                "from this replica (tier 2 windows only).",
                labels->second + Labels{{"replica", "osd." + std::to_string(key.second)}},
                static_cast<double>(n));
  }
  return ok_status();
}

}  // namespace

std::unique_ptr<Collector> make_osd_collector(const CollectorContext& ctx) {
  return std::make_unique<OsdCollector>(ctx);
}

}  // namespace cephscope
