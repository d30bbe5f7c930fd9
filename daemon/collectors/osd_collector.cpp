// osd collector: per-op stage latency in every ceph-osd of the host, from uprobes attached per
// OSD process at offsets of its build's probe profile. See docs/collectors/osd.md.
#include "collectors/osd_collector.h"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <tuple>

#include "bpf/osd.h"
#include "libbpf/maps.h"
#include "osd.skel.h"
#include "profile/store.h"

namespace cephscope {
namespace {

constexpr std::array<const char*, OSD_STAGE_COUNT> kStages = {
    "throttle", "receive", "dispatch", "queue", "execute", "replication", "commit"};
constexpr std::array<const char*, OSD_OP_COUNT> kOps = {"read", "write", "other"};

// One uprobe: the function it goes on and the program it runs.
struct Probe {
  const char* function;
  const char* program;
};
constexpr std::array<Probe, 3> kProbes = {{
    {"BlueStore::queue_transactions", "osd_txn_queued"},    // P1: transaction queued
    {"PrimaryLogPG::log_op_stats", "osd_op_done"},          // P2: client op done (primary)
    {"ReplicatedBackend::repop_commit", "osd_subop_done"},  // P3: replicated write done
}};

// What the probes need resolved in each ceph-osd build (docs/collectors/osd-stages.md).
constexpr const char* kProbeSet = R"({
  "schema": "cephscope-probe-set", "schema_version": 1, "name": "osd-stages",
  "description": "OSD stage collector: op completion, transaction queued, stamps Ceph keeps.",
  "objects": ["ceph-osd"],
  "functions": ["BlueStore::queue_transactions", "PrimaryLogPG::log_op_stats",
                "ReplicatedBackend::repop_commit"],
  "types": [
    {"name": "OpRequest", "members": ["request", "reqid.name._type", "reqid.name._num",
      "reqid.tid", "op_info.rmw_flags", "dequeued_time", "events"]},
    {"name": "TrackedOp::Event", "members": ["stamp", "str"]},
    {"name": "Message", "members": ["recv_stamp", "throttle_stamp", "recv_complete_stamp",
      "header.data_len"]},
    {"name": "ReplicatedBackend::RepModify", "members": ["op"]}
  ]})";

using OsdSkel = Skeleton<osd_bpf, osd_bpf__destroy>;

std::int64_t realtime_offset_ns() {
  timespec rt{};
  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &rt);
  return (rt.tv_sec - mono.tv_sec) * 1'000'000'000LL + (rt.tv_nsec - mono.tv_nsec);
}

// Member offsets of one build; `have` names the groups that resolved.
osd_layout layout_of(const profile::Profile& p, std::string& missing) {
  osd_layout l{};
  auto off = [&](const char* type, const char* path, std::uint32_t& into) {
    const auto* m = p.member(type, path);
    if (m == nullptr || m->status != profile::ItemStatus::kOk) {
      missing += std::string(missing.empty() ? "" : ", ") + type + "::" + path;
      return false;
    }
    into = static_cast<std::uint32_t>(m->offset);
    return true;
  };
  std::uint32_t num = 0;
  std::uint32_t tid = 0;
  std::uint32_t ignored = 0;
  const bool request = off("OpRequest", "request", l.op_request);
  if (off("OpRequest", "reqid.name._type", l.op_reqid) &&
      off("OpRequest", "reqid.name._num", num) && off("OpRequest", "reqid.tid", tid) &&
      num == l.op_reqid + 8 && tid == l.op_reqid + 16) {
    l.have |= OSD_HAVE_REQID;
  }
  if (request && off("Message", "recv_stamp", l.msg_recv_stamp) &&
      off("Message", "throttle_stamp", l.msg_throttle_stamp) &&
      off("Message", "recv_complete_stamp", l.msg_complete_stamp)) {
    l.have |= OSD_HAVE_STAMPS;
  }
  if (request && off("Message", "header.data_len", l.msg_data_len)) {
    l.have |= OSD_HAVE_DATA_LEN;
  }
  if (off("OpRequest", "dequeued_time", l.op_dequeued_time)) {
    l.have |= OSD_HAVE_DEQUEUED;
  }
  const auto* event = p.type("TrackedOp::Event");
  if (off("OpRequest", "events", l.op_events) && off("TrackedOp::Event", "str", ignored) &&
      ignored == 8 && event != nullptr && event->size == OSD_EVENT_SIZE) {
    l.have |= OSD_HAVE_EVENTS;
  }
  if (off("OpRequest", "op_info.rmw_flags", l.op_rmw_flags)) {
    l.have |= OSD_HAVE_RMW_FLAGS;
  }
  off("ReplicatedBackend::RepModify", "op", l.repmod_op);
  return l;
}

class OsdCollector final : public BpfCollector {
 public:
  explicit OsdCollector(const CollectorContext& ctx)
      : store_(profile::StoreOptions{}), set_(*profile::parse_probe_set(kProbeSet)) {
    start(ctx);
  }
  [[nodiscard]] const char* name() const override { return "osd"; }
  void collect(MetricSink& out, const TargetLabelMap& targets) override;
  void sync_targets(const std::vector<TargetView>& targets) override;
  [[nodiscard]] std::vector<ProbeStatus> probes() const override;

 private:
  // The probes of one OSD process; links detach when it goes.
  struct Process {
    std::vector<Link> links;
    std::vector<ProbeStatus> status;
  };

  void start(const CollectorContext& ctx);
  void attach_process(const TargetView& target, pid_t pid, Process& proc);

  profile::ProfileStore store_;
  profile::ProbeSet set_;
  osd_bpf* skel_ = nullptr;  // owned by the base (adopt)
  int stats_fd_ = -1;
  int layouts_fd_ = -1;
  std::map<pid_t, Process> attached_;  // destroyed before the base closes the object
};

void OsdCollector::start(const CollectorContext& ctx) {
  std::vector<std::string> all;
  for (const auto& p : kProbes) {
    all.emplace_back(p.function);
  }
  OsdSkel skel;
  if (auto err = open_skeleton(skel, osd_bpf__open, ctx.tracked_map_fd); !err.empty()) {
    unavailable(err, all);
    return;
  }
  if (const int err = osd_bpf__load(skel.get()); err != 0) {
    unavailable(std::string("BPF load failed: ") + std::strerror(-err), all);
    return;
  }
  skel->bss->rt_off_ns = realtime_offset_ns();
  skel->bss->slow_ns = static_cast<std::uint64_t>(
      std::chrono::nanoseconds(ctx.config.collectors.osd_slow_op_threshold).count());
  stats_fd_ = bpf_map__fd(skel->maps.osd_stats);
  layouts_fd_ = bpf_map__fd(skel->maps.osd_layouts);
  skel_ = skel.release();
  osd_bpf* raw = skel_;
  adopt(
      raw->obj, [raw] { osd_bpf__destroy(raw); }, "uprobe");
  store_.load_shipped();
}

void OsdCollector::sync_targets(const std::vector<TargetView>& targets) {
  if (skel_ == nullptr) {
    return;
  }
  skel_->bss->rt_off_ns = realtime_offset_ns();
  std::set<pid_t> live;
  for (const auto& t : targets) {
    if (t.identity.kind != TargetKind::kCephOsd) {
      continue;
    }
    for (const pid_t pid : t.pids) {
      live.insert(pid);
      if (!attached_.contains(pid)) {
        attach_process(t, pid, attached_[pid]);
      }
    }
  }
  for (auto it = attached_.begin(); it != attached_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    const auto tgid = static_cast<std::uint32_t>(it->first);
    bpf_map_delete_elem(layouts_fd_, &tgid);
    it = attached_.erase(it);
  }
}

void OsdCollector::attach_process(const TargetView& target, pid_t pid, Process& proc) {
  const std::string who = target.identity.ceph_daemon;
  auto fail_all = [&](const std::string& reason) {
    spdlog::warn("osd: {} (pid {}): {}", who, pid, reason);
    for (const auto& p : kProbes) {
      proc.status.push_back({p.function, who, false, reason});
    }
  };
  const auto ident = profile::identify_module(pid, "");
  if (!ident.ok()) {
    fail_all(std::string("binary refused: ") + std::string(profile::to_string(ident.refusal)));
    return;
  }
  const auto& module = *ident.module;
  auto loaded = store_.for_module(module, set_);
  if (!loaded.ok()) {
    fail_all("no probe profile: " + loaded.error().message);
    return;
  }
  const auto& prof = loaded->profile;
  std::string missing;
  const osd_layout layout = layout_of(prof, missing);
  if (!missing.empty()) {
    spdlog::warn("osd: {} build {}: members not resolved ({}): {}", who, prof.build_id, prof.source,
                 missing);
  }
  const auto tgid = static_cast<std::uint32_t>(pid);
  if (bpf_map_update_elem(layouts_fd_, &tgid, &layout, BPF_ANY) != 0) {
    fail_all(std::string("cannot store the layout: ") + std::strerror(errno));
    return;
  }
  // What each probe needs beyond its function.
  const std::array<std::uint32_t, 3> needs = {OSD_HAVE_REQID, OSD_HAVE_STAMPS, OSD_HAVE_STAMPS};
  for (std::size_t i = 0; i < kProbes.size(); ++i) {
    const auto& p = kProbes[i];
    const auto* fn = prof.function(p.function);
    const profile::FunctionInstance* inst = nullptr;
    if (fn != nullptr && fn->status == profile::ItemStatus::kOk) {
      for (const auto& x : fn->instances) {
        if (!x.inlined && !x.clone) {
          inst = &x;
          break;
        }
      }
    }
    if (inst == nullptr) {
      const std::string why =
          fn == nullptr ? "not in profile" : std::string(profile::to_string(fn->status));
      proc.status.push_back({p.function, who, false, "function " + why});
      continue;
    }
    if ((layout.have & needs[i]) != needs[i]) {
      proc.status.push_back({p.function, who, false, "members missing: " + missing});
      continue;
    }
    // CET builds start with endbr64, which the kernel single-steps: attach after it.
    const std::uint64_t offset = inst->file_offset + (inst->entry_insn == "endbr64" ? 4 : 0);
    LIBBPF_OPTS(bpf_uprobe_opts, opts);
    auto* prog = bpf_object__find_program_by_name(skel_->obj, p.program);
    bpf_link* link =
        bpf_program__attach_uprobe_opts(prog, pid, module.host_path.c_str(), offset, &opts);
    if (link == nullptr) {
      const std::string why = std::string("attach failed: ") + std::strerror(errno);
      spdlog::warn("osd: {} (pid {}): {} {}", who, pid, p.function, why);
      proc.status.push_back({p.function, who, false, why});
      continue;
    }
    proc.links.emplace_back(link);
    proc.status.push_back({p.function, who, true, "ok"});
  }
  spdlog::info("osd: {} (pid {}): {} of {} probes attached, profile {} ({})", who, pid,
               proc.links.size(), kProbes.size(), prof.build_id,
               profile::to_string(loaded->origin));
}

// One status per probe and target: a target (osd.N) can have several processes (another
// cluster's osd.N on the host); the probe counts as attached when it is in all of them.
std::vector<ProbeStatus> OsdCollector::probes() const {
  auto out = BpfCollector::probes();
  std::map<std::pair<std::string, std::string>, ProbeStatus> merged;
  for (const auto& [pid, proc] : attached_) {
    for (const auto& st : proc.status) {
      auto [it, fresh] = merged.try_emplace({st.probe, st.target}, st);
      if (!fresh && it->second.attached && !st.attached) {
        it->second = st;
      }
    }
  }
  for (auto& [key, st] : merged) {
    out.push_back(std::move(st));
  }
  return out;
}

void OsdCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  if (stats_fd_ < 0) {
    return;
  }
  std::map<std::tuple<std::uint32_t, int, int, int>, osd_stats> sums;
  for_each_percpu<osd_stats_key, osd_stats>(
      stats_fd_, [&](const osd_stats_key& k, std::span<const osd_stats> cpus) {
        auto& s = sums[{k.target, k.kind, k.op, k.stage}];
        for (const auto& c : cpus) {
          add_hist(s.latency, c.latency);
          s.slow += c.slow;
          s.bytes_in += c.bytes_in;
          s.bytes_out += c.bytes_out;
        }
      });
  prune_keys<osd_stats_key>(stats_fd_,
                            [&](const osd_stats_key& k) { return targets.contains(k.target); });

  for (const auto& [key, s] : sums) {
    const auto [target, kind, op, stage] = key;
    auto labels = targets.find(target);
    if (labels == targets.end() || op >= OSD_OP_COUNT || stage > OSD_STAGE_WHOLE) {
      continue;
    }
    const bool subop = kind == OSD_KIND_SUBOP;
    const Labels l = subop ? labels->second : labels->second + Labels{{"op", kOps[op]}};
    if (stage == OSD_STAGE_WHOLE) {
      if (subop) {
        out.histogram("cephscope_osd_subop_seconds",
                      "Replicated writes received from a primary: MOSDRepOp received -> local "
                      "commit (Ceph's subop_w_latency).",
                      l, s.latency);
      } else {
        out.histogram("cephscope_osd_op_seconds",
                      "Client ops on their primary OSD: message received -> reply (Ceph's "
                      "op_r/op_w_latency).",
                      l, s.latency);
      }
      const Labels layer = labels->second + Labels{{"layer", subop ? "replica" : "osd_op"}};
      const char* help = "Bytes seen at each layer of the IO path, per target.";
      out.counter("cephscope_layer_bytes_total", help, layer + Labels{{"direction", "write"}},
                  static_cast<double>(s.bytes_in));
      if (!subop) {
        out.counter("cephscope_layer_bytes_total", help, layer + Labels{{"direction", "read"}},
                    static_cast<double>(s.bytes_out));
      }
      continue;
    }
    const Labels ls = l + Labels{{"stage", kStages[stage]}};
    out.histogram(subop ? "cephscope_osd_subop_stage_seconds" : "cephscope_osd_op_stage_seconds",
                  "Time an OSD op spent in each stage (see docs/collectors/osd.md).", ls,
                  s.latency);
    if (!subop) {
      out.counter("cephscope_osd_slow_ops_total",
                  "Client ops over the slow-op threshold, by the stage that took longest.", ls,
                  static_cast<double>(s.slow));
    }
  }
}

}  // namespace

std::unique_ptr<Collector> make_osd_collector(const CollectorContext& ctx) {
  return std::make_unique<OsdCollector>(ctx);
}

}  // namespace cephscope
