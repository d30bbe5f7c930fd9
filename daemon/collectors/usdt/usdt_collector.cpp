// usdt collector: the static markers of any program the config's usdt: rules name. The
// resolver lists a binary's markers (profile/markers.h, cached per build-id like every
// profile); this file attaches usdt.bpf.c's one program at each site of a rule's markers in
// each process of its targets, with the marker's semaphore as the uprobe's reference counter
// and the site's usdt_points index as the link's cookie.
#include "collectors/collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "bpf/usdt.h"
#include "collectors/bpf_collector.h"
#include "collectors/marker_args.h"
#include "collectors/process_attacher.h"
#include "core/hist.h"
#include "libbpf/maps.h"
#include "profile/store.h"
#include "usdt.skel.h"

namespace cephscope {
namespace {

using UsdtSkel = Skeleton<usdt_bpf, usdt_bpf__destroy>;

// How often processes whose rule's library was not mapped yet are looked at again.
constexpr auto kRecheck = std::chrono::seconds(2);

bool rule_applies(const UsdtRule& rule, const TargetIdentity& t) {
  return std::any_of(rule.targets.begin(), rule.targets.end(), [&](const std::string& name) {
    switch (t.kind) {
      case TargetKind::kCephOsd:
        return name == "ceph-osd";
      case TargetKind::kRadosClient:
        return name == "librados-client";
      default:
        return name == t.process;
    }
  });
}

class UsdtCollector final : public BpfCollector {
 public:
  explicit UsdtCollector(const CollectorContext& ctx)
      : rules_(ctx.config.usdt), store_(store_options(ctx.config.profiles)) {
    start(ctx);
  }
  UsdtCollector(const UsdtCollector&) = delete;
  UsdtCollector& operator=(const UsdtCollector&) = delete;
  UsdtCollector(UsdtCollector&&) = delete;
  UsdtCollector& operator=(UsdtCollector&&) = delete;
  ~UsdtCollector() override { attacher_.stop(); }  // before the processes and the object go
  [[nodiscard]] const char* name() const override { return "usdt"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;
  void sync_targets(const std::vector<TargetView>& targets) override;
  [[nodiscard]] std::vector<ProbeStatus> probes() const override;

 private:
  struct Process {
    std::string who;
    std::string fsid;  // a Ceph daemon's cluster: two clusters' osd.0 are two statuses
    std::uint32_t target = 0;
    std::set<std::size_t> pending;  // rules whose binary was not mapped yet
    std::vector<Link> links;        // detached before its points are freed
    std::vector<std::uint32_t> points;
    std::map<std::size_t, ProbeStatus> status;  // by rule
  };
  void start(const CollectorContext& ctx);
  // Attaches the rules that apply to new process PID of TARGET.
  void attach_process(pid_t pid, const TargetView& target, Process& proc,
                      const std::stop_token& stop);
  void attach_rule(pid_t pid, Process& proc, std::size_t rule, const std::stop_token& stop);
  // Attaches ROLE at every site of MARKERS; the status says what failed.
  Status attach_sites(pid_t pid, Process& proc, std::size_t rule, const std::string& path,
                      const std::vector<const profile::Marker*>& markers, std::uint8_t role,
                      unsigned key);
  // Retries the rules whose binary processes had not mapped (a library loaded later).
  void recheck(const std::stop_token& stop);
  void release(Process& proc);

  std::vector<UsdtRule> rules_;
  profile::ProfileStore store_;  // the worker's
  usdt_bpf* skel_ = nullptr;     // owned by the base (adopt)
  int series_fd_ = -1;
  int points_fd_ = -1;
  std::vector<std::uint32_t> free_points_;  // the worker's

  mutable std::mutex mu_;                   // guards the attacher's processes
  ProcessAttacher<Process> attacher_{mu_};  // last: stops first
};

void UsdtCollector::start(const CollectorContext& ctx) {
  std::vector<std::string> all;
  for (const auto& r : rules_) {
    all.push_back(r.name());
  }
  if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, nullptr) != 1) {
    unavailable({Reason::kKernelFeatureMissing,
                 "the kernel has no bpf_get_attach_cookie for uprobes (Linux 5.15)"},
                all);
    return;
  }
  UsdtSkel skel;
  if (auto opened = open_skeleton(skel, usdt_bpf__open, ctx); !opened.ok()) {
    unavailable(cause_of(opened.error(), Reason::kLoadFailed), all);
    return;
  }
  if (auto loaded = load_skeleton(skel, usdt_bpf__load); !loaded.ok()) {
    unavailable(cause_of(loaded.error(), Reason::kLoadFailed), all);
    return;
  }
  series_fd_ = bpf_map__fd(skel->maps.usdt_series);
  points_fd_ = bpf_map__fd(skel->maps.usdt_points);
  prune_by_target<usdt_series_key>(series_fd_);
  skel_ = skel.release();
  usdt_bpf* raw = skel_;
  adopt(
      raw->obj, [raw] { usdt_bpf__destroy(raw); }, "uprobe");
  for (std::uint32_t i = USDT_POINTS_MAX; i > 0; --i) {
    free_points_.push_back(i - 1);
  }
  store_.load_shipped();
  attacher_.start({[this](pid_t pid, const TargetView& t, Process& proc,
                          const std::stop_token& stop) { attach_process(pid, t, proc, stop); },
                   [this](pid_t /*pid*/, Process& proc) { release(proc); },
                   [this](const std::stop_token& stop) { recheck(stop); }, kRecheck, nullptr});
}

void UsdtCollector::sync_targets(const std::vector<TargetView>& targets) {
  if (skel_ == nullptr) {
    return;
  }
  attacher_.sync(targets, [&](const TargetIdentity& t) {
    return std::any_of(rules_.begin(), rules_.end(),
                       [&](const UsdtRule& r) { return rule_applies(r, t); });
  });
}

void UsdtCollector::attach_process(pid_t pid, const TargetView& target, Process& proc,
                                   const std::stop_token& stop) {
  spdlog::debug("usdt: attaching pid {} ({})", pid, target.identity.process);
  proc.who =
      target.identity.process.empty() ? target.identity.ceph_daemon : target.identity.process;
  proc.target = target.id;
  proc.fsid = target.identity.fsid;
  for (std::size_t r = 0; r < rules_.size(); ++r) {
    if (rule_applies(rules_[r], target.identity)) {
      attach_rule(pid, proc, r, stop);
    }
  }
}

void UsdtCollector::recheck(const std::stop_token& stop) {
  auto todo = attacher_.borrow([](const Process& p) { return !p.pending.empty(); });
  for (auto& [pid, proc] : todo) {
    for (const std::size_t rule : std::set<std::size_t>(proc.pending)) {
      proc.pending.erase(rule);
      attach_rule(pid, proc, rule, stop);
    }
    attacher_.give_back(pid, std::move(proc));
  }
}

void UsdtCollector::release(Process& proc) {
  proc.links.clear();  // no hit can read a point after its link is gone
  const usdt_point none{};
  for (const std::uint32_t p : proc.points) {
    bpf_map_update_elem(points_fd_, &p, &none, BPF_ANY);
    free_points_.push_back(p);
  }
  proc.points.clear();
}

void UsdtCollector::attach_rule(pid_t pid, Process& proc, std::size_t rule,
                                const std::stop_token& stop) {
  const UsdtRule& r = rules_[rule];
  auto fail = [&](Reason reason, const std::string& detail) {
    proc.status[rule] = {r.name(), proc.who, false, {reason, detail}, proc.fsid};
    if (!proc.pending.contains(rule)) {  // one line, not one per recheck
      spdlog::warn("usdt: {} (pid {}): {}: {}", proc.who, pid, r.name(), detail);
    }
  };
  const std::string file = std::filesystem::path(r.binary).filename().string();
  const auto ident = profile::identify_module(pid, file);
  if (!ident.ok()) {
    if (ident.error().reason == "not_mapped") {
      proc.pending.insert(rule);
    }
    fail(Reason::kBinaryRefused,
         r.binary + " (" + ident.error().reason + "): " + ident.error().message);
    return;
  }
  if (r.binary.front() == '/' && ident->path != r.binary) {
    fail(Reason::kBinaryRefused, r.binary + ": the process maps " + ident->path + " instead");
    return;
  }
  spdlog::debug("usdt: {} (pid {}): {}: markers of {}", proc.who, pid, r.name(), ident->host_path);
  auto loaded = store_.for_module(*ident, profile::markers_probe_set(file), stop);
  if (!loaded.ok()) {
    fail(reason_of(loaded.error(), Reason::kProfileUnavailable),
         "no marker list: " + loaded.error().message);
    return;
  }
  const std::string in = " in " + ident->path + " (build-id " + ident->build_id + ")";
  std::vector<std::tuple<std::string, std::uint8_t, unsigned>> wanted;
  if (r.span.empty()) {
    wanted.emplace_back(r.probe, USDT_ROLE_COUNT, 0);
  } else {
    wanted.emplace_back(r.start, USDT_ROLE_START, r.key);
    wanted.emplace_back(r.end, USDT_ROLE_END, r.key);
  }
  for (const auto& [probe, role, key] : wanted) {
    const auto found = profile::marker_sites(loaded->profile.markers, r.provider, probe);
    if (found.empty()) {
      fail(Reason::kSymbolNotFound, fmt::format("no marker {}:{}{}", r.provider, probe, in));
      return;
    }
    if (auto attached = attach_sites(pid, proc, rule, ident->host_path, found, role, key);
        !attached.ok()) {
      fail(reason_of(attached.error(), Reason::kAttachFailed),
           fmt::format("{}:{}{}: {}", r.provider, probe, in, attached.error().message));
      return;
    }
  }
  proc.status[rule] = {r.name(), proc.who, true, {}, proc.fsid};
  spdlog::info("usdt: {} (pid {}): {} attached{}", proc.who, pid, r.name(), in);
}

Status UsdtCollector::attach_sites(pid_t pid, Process& proc, std::size_t rule,
                                   const std::string& path,
                                   const std::vector<const profile::Marker*>& markers,
                                   std::uint8_t role, unsigned key) {
  for (const profile::Marker* m : markers) {
    auto spec = marker_arg_spec(*m, key);
    if (!spec.ok()) {
      return error_with(Reason::kMembersMissing, ErrorKind::kUnsupported,
                        "argument " + std::to_string(key) + ": " + spec.error().message);
    }
    if (free_points_.empty()) {
      return error_with(Reason::kResourceLimit, ErrorKind::kSystem,
                        "all " + std::to_string(USDT_POINTS_MAX) + " marker sites are in use");
    }
    const std::uint32_t index = free_points_.back();
    usdt_point point{};
    point.target = proc.target;
    point.rule = static_cast<std::uint16_t>(rule);
    point.role = role;
    point.key = *spec;
    if (bpf_map_update_elem(points_fd_, &index, &point, BPF_ANY) != 0) {
      const int err = errno;
      return error_with(Reason::kInternal, ErrorKind::kSystem,
                        std::string("usdt_points: ") + std::strerror(err), err);
    }
    free_points_.pop_back();
    proc.points.push_back(index);
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .ref_ctr_offset = m->semaphore_offset, .bpf_cookie = index);
    bpf_link* link = bpf_program__attach_uprobe_opts(skel_->progs.usdt_hit, pid, path.c_str(),
                                                     m->file_offset, &opts);
    if (link == nullptr) {
      const int err = errno;
      return error_with(reason_of_errno(err, Reason::kAttachFailed), ErrorKind::kSystem,
                        std::string("attach failed: ") + std::strerror(err), err);
    }
    proc.links.emplace_back(link);
  }
  return ok_status();
}

std::vector<ProbeStatus> UsdtCollector::probes() const {
  auto out = BpfCollector::probes();
  std::lock_guard lock(mu_);
  ProbeStatusMerge merged;
  for (const auto& [pid, proc] : attacher_.attached()) {
    for (const auto& [rule, st] : proc.status) {
      merged.add(st);
    }
  }
  merged.append_to(out);
  return out;
}

Status UsdtCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  if (series_fd_ < 0) {
    return ok_status();
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, usdt_series> sums;
  Status walked = for_each_percpu<usdt_series_key, usdt_series>(
      series_fd_, [&](const usdt_series_key& k, std::span<const usdt_series> cpus) {
        auto& s = sums[{k.target, k.rule}];
        for (const auto& c : cpus) {
          s.events += c.events;
          add_hist(s.span, c.span);
        }
      });
  if (!walked.ok()) {
    return walked;
  }
  {
    // A counted marker attached and not hit yet is a series at 0, so that rate() and
    // alerts see it from the attach, not from its first hit.
    std::lock_guard lock(mu_);
    for (const auto& [pid, proc] : attacher_.attached()) {
      for (const auto& [rule, st] : proc.status) {
        if (st.attached) {
          sums.try_emplace({proc.target, static_cast<std::uint32_t>(rule)});
        }
      }
    }
  }
  for (const auto& [key, s] : sums) {
    auto labels = targets.find(key.first);
    if (labels == targets.end() || key.second >= rules_.size()) {
      continue;
    }
    const UsdtRule& r = rules_[key.second];
    if (r.span.empty()) {
      out.counter("cephscope_usdt_events_total", "Hits of a static marker (USDT), per target.",
                  labels->second + Labels{{"provider", r.provider}, {"probe", r.probe}},
                  static_cast<double>(s.events));
    } else {
      out.histogram("cephscope_usdt_span_seconds",
                    "Time from a static marker to its pair (usdt: start -> end), per target.",
                    labels->second + Labels{{"provider", r.provider}, {"span", r.span}}, s.span);
    }
  }
  return ok_status();
}

}  // namespace

std::unique_ptr<Collector> make_usdt_collector(const CollectorContext& ctx) {
  return std::make_unique<UsdtCollector>(ctx);
}

}  // namespace cephscope
