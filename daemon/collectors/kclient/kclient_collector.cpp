// kclient collector: the kernel's Ceph client. libceph's OSD requests (krbd devices, CephFS
// data) and CephFS MDS requests, folded in the kernel; mapped rbd devices and CephFS mounts
// as info metrics. fentry where the modules have BTF and the kernel allows it, kprobes
// otherwise; the modules load when the first device is mapped or file system mounted, so
// the probes follow them: loaded when they appear, reloaded when one more does, with the
// maps handed over (no count is lost).
#include "collectors/collector.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "bpf/kclient.h"
#include "collectors/bpf_collector.h"
#include "collectors/kclient/kclient_names.h"
#include "collectors/rados/rados_probes.h"
#include "core/fs.h"
#include "core/hist.h"
#include "core/label_value.h"
#include "core/safe_file.h"
#include "core/unique_fd.h"
#include "kclient.skel.h"

namespace cephscope {
namespace {

using KclientSkel = Skeleton<kclient_bpf, kclient_bpf__destroy>;

constexpr std::array<const char*, 2> kOsdFunctions = {"ceph_osdc_start_request",
                                                      "__complete_request"};
constexpr std::array<const char*, 1> kRbdFunctions = {"rbd_osd_submit"};
constexpr std::array<const char*, 2> kMdsFunctions = {"ceph_mdsc_submit_request",
                                                      "ceph_mdsc_release_request"};

// The modules whose presence decides what loads (bit 0 libceph, 1 rbd, 2 ceph).
unsigned loaded_modules(const std::string& sys_module) {
  unsigned m = 0;
  int bit = 0;
  for (const char* name : {"libceph", "rbd", "ceph"}) {
    if (path_exists(sys_module + "/" + name)) {
      m |= 1u << bit;
    }
    ++bit;
  }
  return m;
}
constexpr unsigned kLibceph = 1;
constexpr unsigned kRbd = 2;
constexpr unsigned kCeph = 4;

// The maps that outlive a reload: the next object takes them over (bpf_map__reuse_fd).
struct KclientMaps {
  UniqueFd inflight, osd_stats, mds_stats, mounts;
};

// One load of the BPF object, for one set of loaded modules.
class KclientProbes final : public BpfCollector {
 public:
  KclientProbes(const CollectorContext& ctx, unsigned modules, const KclientMaps* kept) {
    start(ctx, modules, kept);
  }
  [[nodiscard]] const char* name() const override { return "kclient"; }
  Status collect(MetricSink& /*out*/, const TargetLabelMap& /*targets*/) override {
    return ok_status();
  }
  // Its maps (our own fds of them, -1 when nothing loaded): read by the collector's scrape,
  // handed to the next load.
  [[nodiscard]] const KclientMaps& fds() const { return maps_; }
  KclientMaps release_fds() { return std::move(maps_); }

 private:
  void start(const CollectorContext& ctx, unsigned modules, const KclientMaps* kept);
  Status load(const char* hook, const CollectorContext& ctx, unsigned modules,
              const KclientMaps* kept);
  void forget_maps() override { maps_ = {}; }
  KclientMaps maps_;
};

// The probes of the loaded modules (bit set as loaded_modules gives).
std::vector<std::string> probe_names(unsigned modules) {
  std::vector<std::string> out;
  auto add = [&](const auto& functions) {
    out.insert(out.end(), functions.begin(), functions.end());
  };
  if ((modules & kLibceph) != 0) {
    add(kOsdFunctions);
  }
  if ((modules & kRbd) != 0) {
    add(kRbdFunctions);
  }
  if ((modules & kCeph) != 0) {
    add(kMdsFunctions);
  }
  return out;
}

Status KclientProbes::load(const char* hook, const CollectorContext& ctx, unsigned modules,
                           const KclientMaps* kept) {
  KclientSkel skel;
  if (auto opened = open_skeleton(skel, kclient_bpf__open, ctx); !opened.ok()) {
    return opened;
  }
  if (kept != nullptr) {
    for (auto [map, fd] : {std::pair{skel->maps.kclient_inflight, kept->inflight.get()},
                           {skel->maps.kclient_osd_stats, kept->osd_stats.get()},
                           {skel->maps.kclient_mds_stats, kept->mds_stats.get()},
                           {skel->maps.kclient_mounts, kept->mounts.get()}}) {
      if (fd >= 0 && bpf_map__reuse_fd(map, fd) != 0) {
        const int err = errno;
        return error_with(Reason::kInternal, ErrorKind::kSystem,
                          std::string("cannot keep the maps: ") + std::strerror(err), err);
      }
    }
  }
  const std::string prefix = std::string(hook) + "_";
  const auto wanted = probe_names(modules);
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    const std::string n = bpf_program__name(prog);
    bool on = false;
    for (const auto& fn : wanted) {
      on = on || n == prefix + fn;
    }
    bpf_program__set_autoload(prog, on);
  }
  if (auto loaded = load_skeleton(skel, kclient_bpf__load, hook); !loaded.ok()) {
    return loaded.error();
  }
  auto own = [](const bpf_map* map) {
    return UniqueFd(fcntl(bpf_map__fd(map), F_DUPFD_CLOEXEC, 0));
  };
  maps_ = {own(skel->maps.kclient_inflight), own(skel->maps.kclient_osd_stats),
           own(skel->maps.kclient_mds_stats), own(skel->maps.kclient_mounts)};
  prune_by_target<kclient_osd_key>(maps_.osd_stats.get());
  prune_by_target<kclient_mds_key>(maps_.mds_stats.get());
  kclient_bpf* raw = skel.release();
  adopt(
      raw->obj, [raw] { kclient_bpf__destroy(raw); }, hook);
  for (const auto& fn : wanted) {
    attach(bpf_object__find_program_by_name(raw->obj, (prefix + fn).c_str()), fn);
  }
  // MDS requests libceph stamped after this and never seen submitted are lost
  raw->bss->attached_ns = static_cast<__u64>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
  return ok_status();
}

void KclientProbes::start(const CollectorContext& ctx, unsigned modules, const KclientMaps* kept) {
  const auto all = probe_names(kLibceph | kRbd | kCeph);
  if ((modules & kLibceph) == 0) {
    unavailable({Reason::kModuleNotLoaded,
                 "libceph is not loaded (no krbd device or CephFS mount on this host yet); the "
                 "probes go in when it is"},
                all);
    return;
  }
  if (!path_exists("/sys/kernel/btf/libceph")) {
    unavailable({Reason::kKernelFeatureMissing,
                 "libceph has no BTF (/sys/kernel/btf/libceph: the kernel lacks "
                 "CONFIG_DEBUG_INFO_BTF_MODULES); its requests' layout is unknown"},
                all);
    return;
  }
  const Cause why =
      load_fentry_or_kprobe(ctx.config.collectors.kclient.hook, ctx.features,
                            [&](const char* hook) { return load(hook, ctx, modules, kept); });
  if (!why.ok()) {
    unavailable(why, all);
    return;
  }
  if ((modules & kRbd) == 0) {
    for (const auto& fn : kRbdFunctions) {
      unavailable_probe({fn,
                         "",
                         false,
                         {Reason::kModuleNotLoaded,
                          "rbd is not loaded: no krbd device on this host yet (its requests "
                          "count without a device)"}});
    }
  }
  if ((modules & kCeph) == 0) {
    for (const auto& fn : kMdsFunctions) {
      unavailable_probe({fn,
                         "",
                         false,
                         {Reason::kModuleNotLoaded,
                          "ceph (CephFS) is not loaded: no CephFS mount on this host yet"}});
    }
  }
}

// Reads a small sysfs attribute, without its newline; "" when it cannot.
std::string sysfs_value(const std::string& path) {
  auto fd = open_regular(path);
  if (!fd.ok()) {
    return "";
  }
  auto text = read_capped(fd->get(), path, 256);
  if (!text.ok()) {
    return "";
  }
  std::string v = *text;
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) {
    v.pop_back();
  }
  return v;
}

// sysfs says client4123 where Ceph (and the request series) say client.4123.
std::string client_name(std::string id) {
  if (id.starts_with("client") && id.size() > 6 && id[6] != '.') {
    id.insert(6, ".");
  }
  return id;
}

class KclientCollector final : public Collector {
 public:
  explicit KclientCollector(const CollectorContext& ctx)
      : ctx_(ctx),
        modules_(loaded_modules(kSysModule)),
        buckets_(buckets_setting(ctx.config.collectors.kclient.buckets, Buckets::kFull)) {
    probes_ = std::make_unique<KclientProbes>(ctx_, modules_, nullptr);
  }
  [[nodiscard]] const char* name() const override { return "kclient"; }
  // The self-metrics ask from the endpoint's thread while refresh() may swap the object.
  [[nodiscard]] std::string hook() const override {
    std::lock_guard lock(swap_mu_);
    return probes_->hook();
  }
  [[nodiscard]] Cause unavailable_why() const override {
    std::lock_guard lock(swap_mu_);
    return probes_->unavailable_why();
  }
  [[nodiscard]] std::vector<ProbeStatus> probes() const override {
    std::lock_guard lock(swap_mu_);
    return probes_->probes();
  }
  [[nodiscard]] std::vector<MapUsage> maps() const override {
    std::lock_guard lock(swap_mu_);
    return probes_->maps();
  }
  [[nodiscard]] std::vector<std::pair<std::string, ProgramStats>> programs() const override {
    std::lock_guard lock(swap_mu_);
    return probes_->programs();
  }
  [[nodiscard]] Result<LostCounts> lost() const override {
    std::lock_guard lock(swap_mu_);
    return probes_->lost();
  }
  void refresh(Clock::time_point now) override;

 protected:
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;
  void prune_maps(const TargetIds& live) override { probes_->prune(live); }

 private:
  static constexpr const char* kSysModule = "/sys/module";
  Status collect_osd(MetricSink& out, const TargetLabelMap& targets) const;
  Status collect_mds(MetricSink& out, const TargetLabelMap& targets) const;
  void collect_devices(MetricSink& out) const;
  Status collect_mounts(MetricSink& out) const;

  const CollectorContext ctx_;  // a copy: it outlives the caller's (reloads use it)
  unsigned modules_;
  Buckets buckets_;
  mutable std::mutex swap_mu_;  // guards probes_ against refresh()'s swap
  std::unique_ptr<KclientProbes> probes_;
  Clock::time_point next_check_{};
};

// Every 2 s: a module that appeared reloads the probes (rbd's callback address and types,
// CephFS's functions are resolved at load).
void KclientCollector::refresh(Clock::time_point now) {
  if (now < next_check_) {
    return;
  }
  next_check_ = now + std::chrono::seconds(2);
  const unsigned modules = loaded_modules(kSysModule);
  if (modules == modules_ || (modules | modules_) == modules_) {
    return;  // nothing new (a module that went leaves its probes detached by the kernel)
  }
  spdlog::info("kclient: kernel modules changed (libceph {}, rbd {}, ceph {}): reloading",
               (modules & 1) != 0, (modules & 2) != 0, (modules & 4) != 0);
  auto lock = maps_lock();  // no scrape or prune in between
  std::lock_guard swap(swap_mu_);
  const KclientMaps kept = probes_->release_fds();
  probes_.reset();  // detach first: two objects attached at once would count twice
  probes_ = std::make_unique<KclientProbes>(ctx_, modules, &kept);
  modules_ = modules;
}

Status KclientCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  collect_devices(out);
  if (probes_->fds().osd_stats.get() < 0) {
    return ok_status();
  }
  if (Status s = collect_osd(out, targets); !s.ok()) {
    return s;
  }
  if (Status s = collect_mds(out, targets); !s.ok()) {
    return s;
  }
  return collect_mounts(out);
}

// The target's labels, none for an untracked submitter; nullopt for an expired target.
std::optional<Labels> submitter(std::uint32_t target, const TargetLabelMap& targets) {
  if (target == CEPHSCOPE_UNTRACKED) {
    return Labels{};
  }
  auto it = targets.find(target);
  if (it == targets.end()) {
    return std::nullopt;
  }
  return it->second;
}

Status KclientCollector::collect_osd(MetricSink& out, const TargetLabelMap& targets) const {
  std::map<std::tuple<std::uint64_t, std::int64_t, std::int32_t, std::uint32_t, std::uint32_t>,
           kclient_osd_stats>
      sums;
  Status walked = for_each_percpu<kclient_osd_key, kclient_osd_stats>(
      probes_->fds().osd_stats.get(),
      [&](const kclient_osd_key& k, std::span<const kclient_osd_stats> cpus) {
        auto& s = sums[{k.client, k.pool, k.device, k.op, k.target}];
        for (const auto& c : cpus) {
          add_hist(s.latency, c.latency);
          s.bytes += c.bytes;
          for (int e = 0; e < RADOS_ERR_COUNT; ++e) {
            s.errors[e] += c.errors[e];
          }
        }
      });
  if (!walked.ok()) {
    return walked;
  }
  for (const auto& [key, s] : sums) {
    const auto& [client, pool, device, op, target] = key;
    auto who = submitter(target, targets);
    if (!who || op >= RADOS_OP_COUNT) {
      continue;
    }
    const std::string id = std::to_string(pool);
    Labels l{{"client", "client." + std::to_string(client)}};
    if (device != KCLIENT_NO_DEVICE) {
      l.emplace_back("device", "rbd" + std::to_string(device));
    }
    l = l + *who + Labels{{"pool", id}, {"pool_id", id}, {"op", rados::kOps[op]}};
    out.histogram("cephscope_kclient_osd_request_seconds",
                  "The kernel client's OSD requests (krbd, CephFS): submitted -> completed.", l,
                  s.latency, buckets_);
    if (op != RADOS_OP_OTHER) {
      out.counter("cephscope_kclient_osd_request_bytes_total",
                  "Extent bytes of the kernel client's OSD reads and writes that succeeded.", l,
                  static_cast<double>(s.bytes));
    }
    for (int e = 0; e < RADOS_ERR_COUNT; ++e) {
      if (s.errors[e] != 0) {
        out.counter("cephscope_kclient_osd_request_errors_total",
                    "The kernel client's OSD requests that ended with an error, by class.",
                    l + Labels{{"class", rados::kErrorClasses[e]}},
                    static_cast<double>(s.errors[e]));
      }
    }
  }
  return ok_status();
}

Status KclientCollector::collect_mds(MetricSink& out, const TargetLabelMap& targets) const {
  if (probes_->fds().mds_stats.get() < 0) {
    return ok_status();
  }
  std::map<std::tuple<std::uint64_t, std::string, std::uint32_t>, kclient_mds_stats> sums;
  Status walked = for_each_percpu<kclient_mds_key, kclient_mds_stats>(
      probes_->fds().mds_stats.get(),
      [&](const kclient_mds_key& k, std::span<const kclient_mds_stats> cpus) {
        // unknown codes fold into "other": the label set stays fixed
        auto& s = sums[{k.client, kclient::mds_op_name(k.op), k.target}];
        for (const auto& c : cpus) {
          add_hist(s.latency, c.latency);
          s.errors += c.errors;
        }
      });
  if (!walked.ok()) {
    return walked;
  }
  for (const auto& [key, s] : sums) {
    const auto& [client, op, target] = key;
    auto who = submitter(target, targets);
    if (!who) {
      continue;
    }
    const Labels l =
        Labels{{"client", "client." + std::to_string(client)}} + *who + Labels{{"op", op}};
    out.histogram("cephscope_kclient_mds_request_seconds",
                  "CephFS MDS requests of the kernel client, per operation: libceph's own "
                  "submission and completion stamps.",
                  l, s.latency, buckets_);
    out.counter("cephscope_kclient_mds_request_errors_total",
                "CephFS MDS requests that ended aborted or timed out.", l,
                static_cast<double>(s.errors));
  }
  return ok_status();
}

// Mapped rbd devices, from sysfs (the kernel's own words).
void KclientCollector::collect_devices(MetricSink& out) const {
  std::error_code ec;
  const std::filesystem::path dir = "/sys/bus/rbd/devices";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string id = entry.path().filename().string();
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const std::string base = entry.path().string() + "/";
    out.gauge("cephscope_kclient_rbd_device_info",
              "A mapped krbd device: its cluster, client, pool and image.",
              {{"device", "rbd" + id},
               {"fsid", label_value(sysfs_value(base + "cluster_fsid"))},
               {"client", label_value(client_name(sysfs_value(base + "client_id")))},
               {"pool", label_value(sysfs_value(base + "pool"))},
               {"pool_id", label_value(sysfs_value(base + "pool_id"))},
               {"namespace", label_value(sysfs_value(base + "pool_ns"))},
               {"image", label_value(sysfs_value(base + "name"))}},
              1);
  }
}

// CephFS clients the programs met, named by their mount point in the host's mount table.
Status KclientCollector::collect_mounts(MetricSink& out) const {
  std::vector<std::pair<std::uint64_t, kclient_mount>> clients;
  Status walked = for_each_entry<std::uint64_t, kclient_mount>(
      probes_->fds().mounts.get(), [&](const std::uint64_t& client, const kclient_mount& m) {
        clients.emplace_back(client, m);
      });
  if (!walked.ok()) {
    return walked;
  }
  if (clients.empty()) {
    return ok_status();
  }
  const auto mounts = kclient::mount_points("/proc/1/mountinfo");
  for (const auto& [client, m] : clients) {
    auto it = mounts.find(m.dev);
    if (it == mounts.end()) {
      continue;  // unmounted: its requests' series stay, named by client
    }
    out.gauge("cephscope_kclient_cephfs_mount_info",
              "A CephFS mount of the kernel client: its cluster, client and mount point.",
              {{"client", "client." + std::to_string(client)},
               {"fsid", kclient::fsid_text(m.fsid)},
               {"mount_point", label_value(it->second)}},
              1);
  }
  return ok_status();
}

}  // namespace

std::unique_ptr<Collector> make_kclient_collector(const CollectorContext& ctx) {
  return std::make_unique<KclientCollector>(ctx);
}

}  // namespace cephscope
