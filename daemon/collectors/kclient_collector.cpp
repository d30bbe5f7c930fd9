// kclient collector: the kernel's Ceph client. libceph's OSD requests (krbd devices, CephFS
// data) and CephFS MDS requests, folded in the kernel; mapped rbd devices and CephFS mounts
// as info metrics. fentry where the modules have BTF and the kernel allows it, kprobes
// otherwise; the modules load when the first device is mapped or file system mounted, so
// the probes follow them: loaded when they appear, reloaded when one more does, with the
// maps handed over (no count is lost).
#include "collectors/kclient_collector.h"

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
#include "collectors/kclient_names.h"
#include "collectors/rados_probes.h"
#include "core/fs.h"
#include "core/hist.h"
#include "core/label_value.h"
#include "core/safe_file.h"
#include "core/unique_fd.h"
#include "kclient.skel.h"

namespace cephscope {
namespace {

using KclientSkel = Skeleton<kclient_bpf, kclient_bpf__destroy>;

struct Flavour {
  const char* hook;
  const char* prefix;  // program names: <prefix>_<function>
};
constexpr Flavour kFentry{"fentry", "fentry"};
constexpr Flavour kKprobe{"kprobe", "kprobe"};

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

// The maps a reload hands from one object to the next.
struct KeptMaps {
  UniqueFd inflight, osd_stats, mds_stats, mounts;
};

// One load of the BPF object, for one set of loaded modules.
class KclientProbes final : public BpfCollector {
 public:
  KclientProbes(const CollectorContext& ctx, unsigned modules, const KeptMaps* kept) {
    start(ctx, modules, kept);
  }
  [[nodiscard]] const char* name() const override { return "kclient"; }
  Status collect(MetricSink& /*out*/, const TargetLabelMap& /*targets*/) override {
    return ok_status();
  }
  void prune_maps(const TargetIds& live) override { BpfCollector::prune_maps(live); }
  [[nodiscard]] KeptMaps keep() const {
    return {UniqueFd(dup_fd(inflight_fd_)), UniqueFd(dup_fd(osd_fd_)), UniqueFd(dup_fd(mds_fd_)),
            UniqueFd(dup_fd(mounts_fd_))};
  }
  int osd_fd_ = -1, mds_fd_ = -1, mounts_fd_ = -1, inflight_fd_ = -1;

 private:
  static int dup_fd(int fd) { return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0); }
  void start(const CollectorContext& ctx, unsigned modules, const KeptMaps* kept);
  Status load(const Flavour& flavour, const Feature& feature, const CollectorContext& ctx,
              unsigned modules, const KeptMaps* kept);
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

Status KclientProbes::load(const Flavour& flavour, const Feature& feature,
                           const CollectorContext& ctx, unsigned modules, const KeptMaps* kept) {
  if (!feature.available) {
    return error_with(feature.why.reason, ErrorKind::kUnsupported,
                      std::string(flavour.hook) + ": " + feature.why.detail);
  }
  KclientSkel skel;
  if (auto opened = open_skeleton(skel, kclient_bpf__open, ctx.tracked_maps); !opened.ok()) {
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
  const std::string prefix = std::string(flavour.prefix) + "_";
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
  if (const int err = kclient_bpf__load(skel.get()); err != 0) {
    return error_with(reason_of_errno(-err, Reason::kLoadFailed), ErrorKind::kSystem,
                      std::string(flavour.hook) + ": BPF load failed: " + std::strerror(-err),
                      -err);
  }
  osd_fd_ = bpf_map__fd(skel->maps.kclient_osd_stats);
  mds_fd_ = bpf_map__fd(skel->maps.kclient_mds_stats);
  mounts_fd_ = bpf_map__fd(skel->maps.kclient_mounts);
  inflight_fd_ = bpf_map__fd(skel->maps.kclient_inflight);
  prune_by_target<kclient_osd_key>(osd_fd_);
  prune_by_target<kclient_mds_key>(mds_fd_);
  kclient_bpf* raw = skel.release();
  adopt(
      raw->obj, [raw] { kclient_bpf__destroy(raw); }, flavour.hook);
  for (const auto& fn : wanted) {
    attach(bpf_object__find_program_by_name(raw->obj, (prefix + fn).c_str()), fn);
  }
  // completions of requests libceph stamped after this and never seen submitted are lost
  raw->bss->attached_ns = static_cast<__u64>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
  return ok_status();
}

void KclientProbes::start(const CollectorContext& ctx, unsigned modules, const KeptMaps* kept) {
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
  const std::string& wanted = ctx.config.collectors.kclient.hook;
  std::optional<Cause> first;
  Status loaded = error_with(Reason::kLoadFailed, ErrorKind::kUnsupported, "not tried");
  if (wanted != "kprobe") {
    loaded = load(kFentry, ctx.features.fentry, ctx, modules, kept);
    if (!loaded.ok()) {
      first = cause_of(loaded.error(), Reason::kLoadFailed);
      if (wanted == "fentry") {
        unavailable(*first, all);
        return;
      }
      spdlog::info("kclient: fentry unusable ({}), trying kprobes", first->detail);
    }
  }
  if (!loaded.ok()) {
    loaded = load(kKprobe, ctx.features.kprobe, ctx, modules, kept);
    if (!loaded.ok()) {
      unavailable(either_failed(first, cause_of(loaded.error(), Reason::kLoadFailed)), all);
      return;
    }
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

  const CollectorContext& ctx_;
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
  const KeptMaps kept = probes_->keep();
  probes_.reset();  // detach first: two objects attached at once would count twice
  probes_ = std::make_unique<KclientProbes>(ctx_, modules, &kept);
  modules_ = modules;
}

Status KclientCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  collect_devices(out);
  if (probes_->osd_fd_ < 0) {
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
      probes_->osd_fd_, [&](const kclient_osd_key& k, std::span<const kclient_osd_stats> cpus) {
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
  if (probes_->mds_fd_ < 0) {
    return ok_status();
  }
  std::map<std::tuple<std::uint64_t, std::string, std::uint32_t>, kclient_mds_stats> sums;
  Status walked = for_each_percpu<kclient_mds_key, kclient_mds_stats>(
      probes_->mds_fd_, [&](const kclient_mds_key& k, std::span<const kclient_mds_stats> cpus) {
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
  std::uint64_t key = 0;
  const void* prev = nullptr;
  std::uint64_t next = 0;
  while (bpf_map_get_next_key(probes_->mounts_fd_, prev, &next) == 0) {
    kclient_mount m{};
    if (bpf_map_lookup_elem(probes_->mounts_fd_, &next, &m) == 0) {
      clients.emplace_back(next, m);
    }
    key = next;
    prev = &key;
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
