// rados collector: client-observed op latency in every librados client of the host, from
// uprobes on the Objecter of the library each client calls, attached per process at offsets
// of the library build's probe profile. See docs/collectors/rados.md.
#include "collectors/rados_collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "bpf/rados.h"
#include "collectors/bpf_collector.h"
#include "collectors/layout_table.h"
#include "collectors/rados_probes.h"
#include "collectors/ring_reader.h"
#include "collectors/slow_ops.h"
#include "core/hist.h"
#include "core/label_value.h"
#include "libbpf/maps.h"
#include "profile/store.h"
#include "rados.skel.h"

namespace cephscope {
namespace {

using RadosSkel = Skeleton<rados_bpf, rados_bpf__destroy>;

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
    records_.reset();          // its thread reads attached_
    if (worker_.joinable()) {  // not started when the object failed to load
      worker_.request_stop();
      worker_.join();  // before attached_ and the object go
    }
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
  // The probes of one client process; links detach when it goes.
  struct Process {
    std::string who;  // the process label, for statuses and logs
    std::uint32_t target = 0;
    std::optional<rados_layout> layout;  // stored once a library's probes are placed
    std::set<std::string> seen;          // the libraries found mapped and planned
    std::vector<Link> links;
    std::vector<ProbeStatus> status;
    std::vector<ProbeStatus> refused;  // why not, while no library has the probes
    std::size_t linked = 0;            // a recheck's copy: the links the process has already
  };
  struct Request {
    pid_t pid = 0;
    std::optional<TargetView> attach;  // empty: detach
  };

  void start(const CollectorContext& ctx);
  void work(const std::stop_token& stop);
  // Deletes the per-process series of a client that exited (instance labels): pids are not
  // reused for a series, so they would only pile up.
  void forget_pid(std::uint32_t pid);
  // One slow op's record: kept for /debug/slow-ops and logged.
  void take_record(const rados_slow_record& r);
  void attach_process(const TargetView& target, pid_t pid, Process& proc,
                      const std::stop_token& stop);
  // Plans and attaches the libraries of PID not yet seen; a client may load one later
  // (qemu loads librbd with its rbd block driver).
  void scan_libraries(pid_t pid, Process& proc, const std::stop_token& stop);
  // Every kRecheck: libraries attached clients mapped since.
  void recheck(const std::stop_token& stop);
  // Attaches the plan of one library; false when its layout could not be stored.
  bool attach_library(pid_t pid, Process& proc, const profile::ModuleIdentity& module,
                      rados::BuildPlan plan);

  profile::ProfileStore store_;  // the worker's
  profile::ProbeSet set_;
  rados_bpf* skel_ = nullptr;  // owned by the base (adopt)
  int stats_fd_ = -1;
  std::unique_ptr<LayoutTable<rados_layout>> layouts_;
  Buckets buckets_ = Buckets::kFull;
  bool instance_labels_ = false;
  SlowOpLog* slow_ops_ = nullptr;

  mutable std::mutex mu_;  // guards the members below
  std::condition_variable_any wake_;
  std::deque<Request> queue_;
  std::set<pid_t> queued_;             // pids with an attach in the queue or in progress
  std::map<pid_t, Process> attached_;  // destroyed before the base closes the object
  std::unique_ptr<RingReader> records_;
  std::jthread worker_;  // last: stops first
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
  skel->rodata->instance_labels = instance_labels_;
  skel->rodata->slot_seed = random_seed();
  if (const int err = rados_bpf__load(skel.get()); err != 0) {
    unavailable({reason_of_errno(-err, Reason::kLoadFailed),
                 std::string("BPF load failed: ") + std::strerror(-err)},
                all);
    return;
  }
  buckets_ = buckets_setting(ctx.config.collectors.rados.buckets, Buckets::kFull);
  stats_fd_ = bpf_map__fd(skel->maps.rados_stats);
  prune_by_target<rados_stats_key>(stats_fd_);
  layouts_ = std::make_unique<LayoutTable<rados_layout>>(bpf_map__fd(skel->maps.rados_layout_slots),
                                                         bpf_map__fd(skel->maps.rados_layouts),
                                                         RADOS_LAYOUTS_MAX);
  skel_ = skel.release();
  rados_bpf* raw = skel_;
  adopt(
      raw->obj, [raw] { rados_bpf__destroy(raw); }, "uprobe");
  store_.load_shipped();
  skel_->bss->rt_off_ns = realtime_offset_ns();
  slow_ops_ = ctx.slow_ops;
  if (slow_ops_ != nullptr) {
    skel_->bss->slow_ns = static_cast<std::uint64_t>(
        std::chrono::nanoseconds(ctx.config.collectors.rados_slow_op_threshold).count());
    records_ = RingReader::start(bpf_map__fd(skel_->maps.rados_records), "rados",
                                 [this](const void* data, std::size_t size) {
                                   if (size >= sizeof(rados_slow_record)) {
                                     take_record(*static_cast<const rados_slow_record*>(data));
                                   }
                                 });
  }
  worker_ = std::jthread([this](const std::stop_token& stop) { work(stop); });
}

void RadosCollector::sync_targets(const std::vector<TargetView>& targets) {
  if (skel_ == nullptr) {
    return;
  }
  std::lock_guard lock(mu_);
  const std::size_t before = queue_.size();
  auto changes = process_changes(targets, TargetKind::kRadosClient, attached_, queued_);
  for (auto& [pid, t] : changes.attach) {
    queue_.push_back({pid, std::move(t)});
  }
  for (const pid_t pid : changes.gone) {
    queue_.push_back({pid, std::nullopt});
  }
  if (queue_.size() != before) {
    wake_.notify_one();
  }
}

void RadosCollector::work(const std::stop_token& stop) {
  for (;;) {
    Request req;
    {
      std::unique_lock lock(mu_);
      if (!wake_.wait_for(lock, stop, kRecheck, [&] { return !queue_.empty(); })) {
        if (stop.stop_requested()) {
          return;
        }
        lock.unlock();
        recheck(stop);
        continue;
      }
      req = std::move(queue_.front());
      queue_.pop_front();
      if (!req.attach && attached_.contains(req.pid) == queued_.contains(req.pid)) {
        continue;  // a detach already done, or one for an attach still queued
      }
    }
    if (req.attach) {
      Process proc;
      attach_process(*req.attach, req.pid, proc, stop);
      std::lock_guard lock(mu_);
      queued_.erase(req.pid);
      attached_.insert_or_assign(req.pid, std::move(proc));
      continue;
    }
    Process gone;
    {
      std::lock_guard lock(mu_);
      auto it = attached_.find(req.pid);
      if (it == attached_.end()) {
        continue;
      }
      gone = std::move(it->second);
      attached_.erase(it);
    }
    const auto tgid = static_cast<std::uint32_t>(req.pid);
    if (auto erased = layouts_->erase(tgid); !erased.ok()) {
      spdlog::warn("rados: {} (pid {}): {}", gone.who, req.pid, erased.error().message);
    }
    if (instance_labels_) {
      forget_pid(tgid);
    }
    gone.links.clear();  // the slow part, outside the lock
  }
}

void RadosCollector::attach_process(const TargetView& target, pid_t pid, Process& proc,
                                    const std::stop_token& stop) {
  proc.who = target.identity.process;
  proc.target = target.id;
  scan_libraries(pid, proc, stop);
}

void RadosCollector::scan_libraries(pid_t pid, Process& proc, const std::stop_token& stop) {
  const std::size_t links_before = proc.links.size();
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
    auto loaded = store_.for_module(*ident, set_, stop);
    if (!loaded.ok()) {
      proc.refused.push_back({lib,
                              proc.who,
                              false,
                              {reason_of(loaded.error(), Reason::kProfileUnavailable),
                               "no probe profile: " + loaded.error().message}});
      continue;
    }
    // A profile from the container's own files steers a probe only where this library agrees.
    std::optional<profile::OffsetVerifier> verifier;
    if (loaded->from_target_files) {
      auto opened = profile::OffsetVerifier::open(ident->host_path);
      if (!opened.ok()) {
        proc.refused.push_back(
            {lib,
             proc.who,
             false,
             {Reason::kOffsetUnverified,
              "profile from the container's files not checked: " + opened.error().message}});
        continue;
      }
      verifier = std::move(opened).value();
    }
    auto plan = rados::plan_for(loaded->profile, proc.who, verifier ? &*verifier : nullptr);
    if (plan.points.empty()) {
      // Expected for the library whose Objecter the client does not call (Tentacle's
      // librados.so.2 has none): said only while no library of the client had the probes.
      for (auto st : plan.unavailable) {
        st.why.detail = std::string(lib) + ": " + st.why.detail;
        proc.refused.push_back(std::move(st));
      }
      continue;
    }
    spdlog::info("rados: {} (pid {}): {}: profile {} ({}) from {}", proc.who, pid, lib,
                 loaded->profile.build_id, profile::to_string(loaded->origin), loaded->location);
    attach_library(pid, proc, *ident, std::move(plan));
  }
  if (!proc.layout) {
    for (const auto& st : proc.refused) {
      spdlog::warn("rados: {} (pid {}): {}: {}", proc.who, pid, st.probe, st.why.detail);
    }
  }
  if (proc.links.size() != links_before || links_before + proc.linked == 0) {
    spdlog::info("rados: {} (pid {}): {} probes attached", proc.who, pid,
                 proc.linked + proc.links.size());
  }
}

void RadosCollector::recheck(const std::stop_token& stop) {
  std::vector<std::pair<pid_t, Process>> todo;
  {
    std::lock_guard lock(mu_);
    for (const auto& [pid, p] : attached_) {
      if (p.seen.size() < rados::kLibraries.size()) {
        Process copy;
        copy.who = p.who;
        copy.target = p.target;
        copy.layout = p.layout;
        copy.seen = p.seen;
        copy.linked = p.links.size();
        todo.emplace_back(pid, std::move(copy));
      }
    }
  }
  for (auto& [pid, found] : todo) {
    const std::size_t seen_before = found.seen.size();
    scan_libraries(pid, found, stop);
    if (found.seen.size() == seen_before) {
      continue;
    }
    std::lock_guard lock(mu_);
    auto it = attached_.find(pid);
    if (it == attached_.end()) {
      continue;  // gone meanwhile: its new links go with `found`
    }
    Process& p = it->second;
    p.seen = found.seen;
    if (found.layout) {
      p.refused.clear();
    }
    p.layout = found.layout;
    p.refused.insert(p.refused.end(), found.refused.begin(), found.refused.end());
    p.status.insert(p.status.end(), found.status.begin(), found.status.end());
    std::move(found.links.begin(), found.links.end(), std::back_inserter(p.links));
    found.links.clear();
  }
}

bool RadosCollector::attach_library(pid_t pid, Process& proc, const profile::ModuleIdentity& module,
                                    rados::BuildPlan plan) {
  const std::string where = proc.who + " " + module.name;
  if (!plan.missing_members.empty()) {
    spdlog::warn("rados: {} build {}: members not resolved: {}", where, module.build_id,
                 plan.missing_members);
  }
  plan.layout.target = proc.target;
  if (!proc.layout) {
    if (auto stored = layouts_->put(static_cast<std::uint32_t>(pid), plan.layout); !stored.ok()) {
      proc.status.push_back(
          {module.name, proc.who, false, {Reason::kInternal, stored.error().message}});
      return false;
    }
    proc.layout = plan.layout;
    proc.refused.clear();
  } else if (std::memcmp(&*proc.layout, &plan.layout, sizeof(plan.layout)) != 0) {
    // One layout per process: two libraries of one build agree; two builds cannot both be
    // loaded by one client.
    proc.status.push_back({module.name,
                           proc.who,
                           false,
                           {Reason::kMembersMissing,
                            "its layout differs from the other "
                            "library's in the process"}});
    return false;
  }
  proc.status.insert(proc.status.end(), plan.unavailable.begin(), plan.unavailable.end());
  for (const auto& point : plan.points) {
    auto* prog = bpf_object__find_program_by_name(skel_->obj, point.program.c_str());
    LIBBPF_OPTS(bpf_uprobe_opts, opts);
    bpf_link* link =
        bpf_program__attach_uprobe_opts(prog, pid, module.host_path.c_str(), point.offset, &opts);
    if (link == nullptr) {
      const int err = errno;
      const Cause why{reason_of_errno(err, Reason::kAttachFailed),
                      std::string("attach failed: ") + std::strerror(err)};
      spdlog::warn("rados: {} (pid {}): {} {}", where, pid, point.function, why.detail);
      proc.status.push_back({point.function, proc.who, false, why});
      continue;
    }
    proc.links.emplace_back(link);
    proc.status.push_back({point.function, proc.who, true, {}});
  }
  return true;
}

void RadosCollector::forget_pid(std::uint32_t pid) {
  const auto lock = maps_lock();
  auto gone = prune_keys<rados_stats_key>(stats_fd_,
                                          [&](const rados_stats_key& k) { return k.pid != pid; });
  if (!gone.ok()) {
    spdlog::warn("rados: series of pid {} not deleted: {}", pid, gone.error().message);
  }
}

void RadosCollector::take_record(const rados_slow_record& r) {
  SlowOp op;
  {
    std::lock_guard lock(mu_);
    auto it = attached_.find(static_cast<pid_t>(r.tgid));
    if (it == attached_.end()) {
      return;  // its process is being detached
    }
    op.process = it->second.who;
  }
  op.kind = "client";
  op.pid = r.tgid;
  op.time_ns = r.time_ns;
  op.op = r.op < RADOS_OP_COUNT ? rados::kOps[r.op] : "other";
  op.tid = r.tid;
  op.pool = static_cast<std::uint64_t>(r.pool);
  if (r.have_ids != 0) {
    op.pg = fmt::format("{}.{:x}", r.pool, r.pg_seed);
    if (r.osd >= 0) {
      op.acting_osd = r.osd;
    }
  }
  op.object.assign(r.object, strnlen(r.object, sizeof(r.object)));
  op.object_truncated = r.object_len > op.object.size();
  op.seconds = static_cast<double>(r.whole_ns) / 1e9;
  op.resends = r.resends;
  if (r.result < 0) {
    op.error = rados::kErrorClasses[rados_error_class(r.result)];
  }
  spdlog::info(
      "rados: slow client op in {} (pid {}): {} tid {} took {:.3f} s; pool {}, pg {}, osd {}, "
      "object \"{}\"{}, {} resends{}{}",
      op.process, op.pid, op.op, op.tid, op.seconds, r.pool, op.pg.empty() ? "unknown" : op.pg,
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
  for (const auto& [pid, proc] : attached_) {
    for (const ProbeStatus& st : proc.layout ? proc.status : proc.refused) {
      merged.add(st);
    }
  }
  merged.append_to(out);
  return out;
}

Status RadosCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  if (stats_fd_ < 0) {
    return ok_status();
  }
  using Key = std::tuple<std::uint32_t, std::int64_t, std::uint32_t, std::uint32_t, std::string>;
  std::map<Key, rados_stats> sums;
  Status walked = for_each_percpu<rados_stats_key, rados_stats>(
      stats_fd_, [&](const rados_stats_key& k, std::span<const rados_stats> cpus) {
        const std::string image(k.image, strnlen(k.image, sizeof(k.image)));
        auto& s = sums[{k.target, k.pool, k.op, k.pid, image}];
        for (const auto& c : cpus) {
          add_hist(s.latency, c.latency);
          s.bytes += c.bytes;
          s.resends += c.resends;
          for (int e = 0; e < RADOS_ERR_COUNT; ++e) {
            s.errors[e] += c.errors[e];
          }
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
    // The daemon learns no pool names (docs/collectors/rados.md): pool is the id, as it
    // stays for the series' life.
    const std::string id = std::to_string(pool);
    Labels l = labels->second;
    if (!image.empty()) {
      l = l + Labels{{"image", label_value(image)}};
    } else if (pid != 0) {
      l = l + Labels{{"pid", std::to_string(pid)}};
    }
    l = l + Labels{{"pool", id}, {"pool_id", id}, {"op", rados::kOps[op]}};
    out.histogram("cephscope_client_op_seconds",
                  "librados client ops as the client sees them: first send -> finish.", l,
                  s.latency, buckets_);
    out.counter("cephscope_client_op_resends_total",
                "Sends of client ops after their first (new OSD map, -EAGAIN, redirect).", l,
                static_cast<double>(s.resends));
    for (int e = 0; e < RADOS_ERR_COUNT; ++e) {
      if (s.errors[e] != 0) {
        out.counter(
            "cephscope_client_op_errors_total", "Client ops that finished with an error, by class.",
            l + Labels{{"class", rados::kErrorClasses[e]}}, static_cast<double>(s.errors[e]));
      }
    }
    if (op != RADOS_OP_OTHER) {
      bytes[{target, op == RADOS_OP_READ}] += s.bytes;
    }
  }
  // The layer's bytes per target, as every layer has them (the pool, image and pid are in
  // cephscope_client_op_seconds)
  for (const auto& [key, n] : bytes) {
    auto labels = targets.find(key.first);
    out.counter(
        "cephscope_layer_bytes_total", "Bytes seen at each layer of the IO path, per target.",
        labels->second + Labels{{"layer", "client"}, {"direction", key.second ? "read" : "write"}},
        static_cast<double>(n));
  }
  return ok_status();
}

}  // namespace

std::unique_ptr<Collector> make_rados_collector(const CollectorContext& ctx) {
  return std::make_unique<RadosCollector>(ctx);
}

}  // namespace cephscope
