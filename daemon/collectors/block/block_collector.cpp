// block collector: submit, queue and device time, bytes, errors and bio merges per device
// and op, and per tracked target that submitted the requests.
#include "collectors/collector.h"

#include <bpf/bpf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "block.skel.h"
#include "bpf/block.h"
#include "collectors/block/block_devices.h"
#include "collectors/block/block_series.h"
#include "collectors/bpf_collector.h"
#include "core/hist.h"
#include "core/label_value.h"
#include "libbpf/features.h"
#include "libbpf/maps.h"

namespace cephscope {
namespace {

constexpr std::array<const char*, BLOCK_OP_COUNT> kOps = {"read", "write", "flush", "discard",
                                                          "other"};
const std::vector<std::string> kProbes = {
    "block_bio_queue",   "block_rq_insert", "block_rq_issue",      "block_rq_requeue",
    "block_rq_complete", "block_getrq",     "block_bio_backmerge", "block_bio_frontmerge",
    "block_split",       "block_bio_remap"};

using BlockSkel = Skeleton<block_bpf, block_bpf__destroy>;

// Queue freezes: fentry on these, where the kernel has them (the unfreeze function is an
// inline wrapper of blk_mq_unfreeze_queue_nomemrestore from 6.15 on).
// blk_mq_freeze_queue too: 6.12 inlines blk_freeze_queue_start into it (blk-mq.c), so an
// elevator switch's freeze is seen there only (block.bpf.c counts a freeze once either way).
const std::vector<std::string> kFreezeProbes = {"blk_freeze_queue_start", "blk_mq_unfreeze_queue",
                                                "blk_mq_freeze_queue"};
// In the order of the programs below; *_nomem*: 6.15 on, where the others are inline wrappers.
const std::vector<std::string> kFreezeFunctions = {
    "blk_freeze_queue_start", "blk_mq_unfreeze_queue_nomemrestore", "blk_mq_unfreeze_queue",
    "blk_mq_freeze_queue_nomemsave", "blk_mq_freeze_queue"};
using FreezePrograms = std::array<const char*, 5>;
const FreezePrograms kFreezePrograms = {"freeze_start", "unfreeze_nomemrestore", "unfreeze",
                                        "freeze_queue_nomemsave", "freeze_queue"};
// The same as kprobes, where the kernel refuses fentry (or collectors.block.freeze_hook says).
const FreezePrograms kFreezeKprobePrograms = {"kp_freeze_start", "kp_unfreeze_nomemrestore",
                                              "kp_unfreeze", "kp_freeze_queue_nomemsave",
                                              "kp_freeze_queue"};

// How queue freezes may be hooked: the kernel's features and the config's choice.
struct FreezeHooks {
  const Feature& fentry;
  const Feature& kprobe;
  const std::string& wanted;  // auto, fentry or kprobe
};
// The first processes seen freezing a disk keep series of their own, for good; later ones
// count under process="other", so no count ever moves between series.
constexpr std::size_t kFreezersPerDevice = 4;

// Partitions rarely come and go, and a rescan walks /sys/class/block.
constexpr auto kPartitionRescan = std::chrono::seconds(10);
// How often series found in the hash are given their slots (a walk of the hash's keys).
constexpr auto kSeriesClaim = std::chrono::seconds(2);

// The bio's way to its request (merges, splits, remaps) is keyed by device and sector in both
// flavours: classic tracepoints serve both. tp_btf needs neither an insert nor a getrq hook:
// the kernel stamps each request's allocation, which ends its first bio's submit time and
// starts its queue time (block.bpf.c: on_btf_issue), one program run fewer per request.
struct Flavour {
  const char* hook;
  std::array<const char*, 10> programs;  // in the order of kProbes; nullptr: not hooked
};
constexpr Flavour kTpBtf{
    "tp_btf",
    {"btf_bio_queue", nullptr, "btf_rq_issue", "btf_rq_requeue", "btf_rq_complete", nullptr,
     "tp_bio_backmerge", "tp_bio_frontmerge", "tp_split", "tp_bio_remap"}};
constexpr Flavour kTracepoint{
    "tracepoint",
    {"tp_bio_queue", "tp_rq_insert", "tp_rq_issue", "tp_rq_requeue", "tp_rq_complete", "tp_getrq",
     "tp_bio_backmerge", "tp_bio_frontmerge", "tp_split", "tp_bio_remap"}};

// tp_btf programs read the tracepoints' arguments, whose lists changed in Linux 5.11 (see
// block.bpf.c): tell the programs which list this kernel has.
Status set_tp_btf_prototypes(block_bpf& skel) {
  const auto args = tp_btf_arg_counts(
      {"block_bio_queue", "block_rq_issue", "block_rq_insert", "block_rq_requeue"});
  if (args[0] != 1 && args[0] != 2) {
    return error_with(
        Reason::kKernelFeatureMissing, ErrorKind::kUnsupported,
        "tp_btf: unknown prototype of block_bio_queue (" + std::to_string(args[0]) + " arguments)");
  }
  if (args[1] != args[2] || args[1] != args[3] || (args[1] != 1 && args[1] != 2)) {
    return error_with(
        Reason::kKernelFeatureMissing, ErrorKind::kUnsupported,
        "tp_btf: unknown prototypes of block_rq_issue, block_rq_insert and block_rq_requeue (" +
            std::to_string(args[1]) + ", " + std::to_string(args[2]) + " and " +
            std::to_string(args[3]) + " arguments)");
  }
  skel.rodata->bio_queue_with_q = args[0] == 2;
  skel.rodata->rq_with_q = args[1] == 2;
  return ok_status();
}

class BlockCollector final : public BpfCollector {
 public:
  explicit BlockCollector(const CollectorContext& ctx) { start(ctx); }
  [[nodiscard]] const char* name() const override { return "block"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;
  void refresh(Clock::time_point now) override;
  // The maps, and the series slots as a map of BLOCK_SERIES_SLOTS entries, one per owned slot.
  [[nodiscard]] std::vector<MapUsage> maps() const override;

 protected:
  void prune_maps(const TargetIds& live) override;

 private:
  void start(const CollectorContext& ctx);
  // Loads one flavour where the kernel offers its hook, and attaches it; with the freeze
  // programs where fentry and the functions are there (else they are reported unavailable).
  Status load(const Flavour& flavour, const Feature& feature, const FreezeHooks& hooks,
              const CollectorContext& ctx);
  Status load_with(const Flavour& flavour, const CollectorContext& ctx,
                   const std::vector<bool>& freeze, const FreezePrograms& freeze_programs);
  void collect_freezes(MetricSink& out);
  // Mirrors the partition -> disk map of /sys into the BPF map.
  Status write_partitions();
  void sync_partitions();  // write_partitions, and a warning when that fails

  BlockDevices devices_;
  int stats_fd_ = -1;
  std::optional<BlockSeries> series_;
  Clock::time_point next_series_claim_ = Clock::now();
  // What the entries prune_maps() deleted had counted, per device and op: the per-device
  // series count every request, so they must not go back when a target expires.
  std::map<std::pair<std::uint32_t, std::uint32_t>, block_stats> retired_;
  int partitions_fd_ = -1;
  bool target_histograms_ = false;  // collectors.block.target_histograms
  int freezers_fd_ = -1;
  int frozen_time_fd_ = -1;
  std::map<std::uint32_t, std::vector<std::string>> freezers_;  // per disk, in order seen
  Clock::time_point next_partition_scan_ = Clock::now() + kPartitionRescan;
};

Status BlockCollector::load(const Flavour& flavour, const Feature& feature,
                            const FreezeHooks& hooks, const CollectorContext& ctx) {
  if (!feature.available) {
    return error_with(feature.why.reason, ErrorKind::kUnsupported,
                      std::string(flavour.hook) + ": " + feature.why.detail);
  }
  // Which freeze programs to load (kFreezeFunctions), through fentry, else kprobes.
  const auto has = kernel_has_functions(kFreezeFunctions);
  std::vector<bool> none(kFreezePrograms.size(), false);
  std::vector<bool> freeze = none;
  std::optional<Cause> no_freeze;  // the preferred hook's failure first, as the vfs collector
  const struct {
    const char* name;
    const Feature& feature;
    const FreezePrograms& programs;
  } kinds[] = {{"fentry", hooks.fentry, kFreezePrograms},
               {"kprobe", hooks.kprobe, kFreezeKprobePrograms}};
  for (const auto& kind : kinds) {
    if (hooks.wanted != "auto" && hooks.wanted != kind.name) {
      continue;
    }
    const std::string prefix = std::string("queue freezes through ") + kind.name + ": ";
    if (!kind.feature.available) {
      no_freeze =
          either_failed(no_freeze, {kind.feature.why.reason, prefix + kind.feature.why.detail});
      continue;
    }
    if (!has[0] || (!has[1] && !has[2])) {
      no_freeze = {Reason::kKernelFeatureMissing,
                   "queue freezes: this kernel's BTF has no blk_freeze_queue_start or "
                   "blk_mq_unfreeze_queue(_nomemrestore)"};
      break;
    }
    freeze = {true, has[1], !has[1], has[3], !has[3] && has[4]};
    Status loaded = load_with(flavour, ctx, freeze, kind.programs);
    if (loaded.ok()) {
      spdlog::info("block: queue freezes through {}", kind.name);
      if (!freeze[3] && !freeze[4]) {
        unavailable_probe({kFreezeProbes[2],
                           "",
                           false,
                           {Reason::kKernelFeatureMissing,
                            "no blk_mq_freeze_queue(_nomemsave) in this kernel's BTF"}});
      }
      return loaded;
    }
    const Cause failed{cause_of(loaded.error(), Reason::kLoadFailed).reason,
                       prefix + "the programs did not load (" + loaded.error().message + ")"};
    spdlog::warn("block: {}", failed.detail);
    no_freeze = either_failed(no_freeze, failed);
    freeze = none;
  }
  Status loaded = load_with(flavour, ctx, none, kFreezePrograms);
  if (loaded.ok()) {
    // The rest of the collector works: only the freeze probes are reported missing.
    const Cause why = no_freeze.value_or(
        Cause{Reason::kDisabled, "queue freezes: collectors.block.freeze_hook chose no hook"});
    spdlog::info("block: queue freezes not measured ({}): {}", to_string(why.reason), why.detail);
    for (const auto& probe : kFreezeProbes) {
      unavailable_probe({probe, "", false, why});
    }
  }
  return loaded;
}

Status BlockCollector::load_with(const Flavour& flavour, const CollectorContext& ctx,
                                 const std::vector<bool>& freeze,
                                 const FreezePrograms& freeze_programs) {
  BlockSkel skel;
  if (auto opened = open_skeleton(skel, block_bpf__open, ctx); !opened.ok()) {
    return opened;
  }
  // The in-flight tables' hash seed: no process can aim its IO at the slots of another's.
  skel->rodata->slot_seed = random_seed();
  if (&flavour == &kTpBtf) {
    if (auto set = set_tp_btf_prototypes(*skel); !set.ok()) {
      return set;
    }
  }
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    const std::string_view n = bpf_program__name(prog);
    bool load = std::any_of(flavour.programs.begin(), flavour.programs.end(),
                            [&](const char* p) { return p != nullptr && n == p; });
    for (std::size_t i = 0; i < freeze_programs.size(); ++i) {
      load = load || (n == freeze_programs[i] && freeze[i]);
    }
    bpf_program__set_autoload(prog, load);
  }
  if (auto loaded = load_skeleton(skel, block_bpf__load, flavour.hook); !loaded.ok()) {
    return loaded.error();
  }
  stats_fd_ = bpf_map__fd(skel->maps.block_stats);  // pruned by prune_maps()
  series_.emplace(bpf_map__fd(skel->maps.block_series_owner), bpf_map__fd(skel->maps.block_series),
                  stats_fd_);
  partitions_fd_ = bpf_map__fd(skel->maps.block_partitions);
  freezers_fd_ = bpf_map__fd(skel->maps.block_freezers);
  frozen_time_fd_ = bpf_map__fd(skel->maps.block_frozen_time);
  block_bpf* raw = skel.release();
  adopt(
      raw->obj, [raw] { block_bpf__destroy(raw); }, flavour.hook);
  for (std::size_t i = 0; i < kProbes.size(); ++i) {
    if (flavour.programs[i] != nullptr) {
      attach(bpf_object__find_program_by_name(raw->obj, flavour.programs[i]), kProbes[i]);
    }
  }
  if (freeze[0]) {
    auto program = [&](std::size_t i) {
      return bpf_object__find_program_by_name(raw->obj, freeze_programs[i]);
    };
    attach(program(0), kFreezeProbes[0]);
    attach(program(freeze[1] ? 1 : 2), kFreezeProbes[1]);
    if (freeze[3] || freeze[4]) {
      attach(program(freeze[3] ? 3 : 4), kFreezeProbes[2]);
    }
  }
  return ok_status();
}

void BlockCollector::start(const CollectorContext& ctx) {
  target_histograms_ = ctx.config.collectors.block_target_histograms;
  const std::string& wanted = ctx.config.collectors.block.hook;
  const FreezeHooks freeze_hooks{ctx.features.fentry, ctx.features.kprobe,
                                 ctx.config.collectors.block_freeze_hook};
  std::optional<Cause> first;  // why tp_btf failed, when it was tried
  if (wanted != "tracepoint") {
    const Status tp_btf = load(kTpBtf, ctx.features.tp_btf, freeze_hooks, ctx);
    if (tp_btf.ok() || wanted == "tp_btf") {
      if (!tp_btf.ok()) {
        unavailable(cause_of(tp_btf.error(), Reason::kLoadFailed), kProbes);
        unavailable(cause_of(tp_btf.error(), Reason::kLoadFailed), kFreezeProbes);
      }
      sync_partitions();
      return;
    }
    first = cause_of(tp_btf.error(), Reason::kLoadFailed);
    spdlog::info("block: falling back to classic tracepoints ({})", first->detail);
  }
  if (auto tracepoint = load(kTracepoint, ctx.features.tracefs, freeze_hooks, ctx);
      !tracepoint.ok()) {
    const Cause why = either_failed(first, cause_of(tracepoint.error(), Reason::kLoadFailed));
    unavailable(why, kProbes);
    unavailable(why, kFreezeProbes);
    return;
  }
  sync_partitions();
}

// Deletes the entries of expired targets, keeping what they counted in retired_. An entry
// is folded in only once it is deleted; what it gains between the read and the delete was
// never scraped (scrapes wait for this), so no scrape sees a sum go back.
void BlockCollector::prune_maps(const TargetIds& live) {
  if (stats_fd_ < 0) {
    return;
  }
  std::vector<std::pair<block_stats_key, block_stats>> leaving;
  Status walked = for_each_percpu<block_stats_key, block_stats>(
      stats_fd_, [&](const block_stats_key& k, std::span<const block_stats> cpus) {
        if (k.target == CEPHSCOPE_UNTRACKED || live.contains(k.target)) {
          return;
        }
        block_stats sum{};
        for (const auto& c : cpus) {
          add_block_stats(sum, c);
        }
        leaving.emplace_back(k, sum);
      });
  if (!walked.ok()) {
    spdlog::warn("block: expired targets' map entries not deleted: {}", walked.error().message);
    return;
  }
  if (auto freed = series_->release(live,
                                    [&](const block_stats_key& k, auto counted) {
                                      add_block_stats(retired_[{k.dev, k.op}], counted[0]);
                                    });
      !freed.ok()) {
    spdlog::warn("block: series slots of expired targets not taken back: {}",
                 freed.error().message);
  }
  std::size_t deleted = 0;
  for (const auto& [key, sum] : leaving) {
    if (bpf_map_delete_elem(stats_fd_, &key) != 0) {
      spdlog::warn("block: map entry of expired target {} not deleted: {}", key.target,
                   std::strerror(errno));
      continue;
    }
    add_block_stats(retired_[{key.dev, key.op}], sum);
    ++deleted;
  }
  if (deleted > 0) {
    spdlog::debug("block: {} map entries of expired targets deleted", deleted);
  }
}

void BlockCollector::refresh(Clock::time_point now) {
  if (now >= next_partition_scan_) {
    next_partition_scan_ = now + kPartitionRescan;
    sync_partitions();  // picks up disks attached since the last pass
  }
  if (series_ && now >= next_series_claim_) {
    next_series_claim_ = now + kSeriesClaim;
    auto lock = maps_lock();  // a scrape reads the owners
    if (auto given = series_->claim(); !given.ok()) {
      spdlog::warn("block: series slots not given out (the hash counts instead): {}",
                   given.error().message);
    }
  }
}

std::vector<MapUsage> BlockCollector::maps() const {
  std::vector<MapUsage> out = BpfCollector::maps();
  if (series_) {
    out.push_back({"block_series", series_->owned(), BLOCK_SERIES_SLOTS});
  }
  return out;
}

Status BlockCollector::write_partitions() {
  if (partitions_fd_ < 0) {
    return ok_status();
  }
  for (const auto& [part, disk] : devices_.partitions()) {
    if (bpf_map_update_elem(partitions_fd_, &part, &disk, BPF_ANY) != 0) {
      return map_error("bpf_map_update_elem", partitions_fd_);
    }
  }
  return ok_status();
}

void BlockCollector::sync_partitions() {
  if (auto synced = write_partitions(); !synced.ok()) {
    spdlog::warn("block: partitions not mapped to their disks: {}", synced.error().message);
  }
}

// Frozen time per disk, and freezes per disk and process (the first few processes of each
// disk by name, the rest as "other").
void BlockCollector::collect_freezes(MetricSink& out) {
  std::map<std::uint32_t, struct hist> frozen;
  Status walked = for_each_percpu<std::uint32_t, struct hist>(
      frozen_time_fd_, [&](const std::uint32_t& dev, std::span<const struct hist> cpus) {
        for (const auto& c : cpus) {
          add_hist(frozen[dev], c);
        }
      });
  std::map<std::pair<std::uint32_t, std::string>, std::uint64_t> freezes;
  if (walked.ok()) {
    walked = for_each_percpu<block_freezer_key, std::uint64_t>(
        freezers_fd_, [&](const block_freezer_key& k, std::span<const std::uint64_t> cpus) {
          const std::string comm =
              label_value(std::string_view(k.comm, strnlen(k.comm, sizeof(k.comm))));
          auto& own = freezers_[k.dev];
          if (std::find(own.begin(), own.end(), comm) == own.end() &&
              own.size() < kFreezersPerDevice) {
            own.push_back(comm);
          }
          const bool kept = std::find(own.begin(), own.end(), comm) != own.end();
          auto& n = freezes[{k.dev, kept ? comm : "other"}];
          for (const auto c : cpus) {
            n += c;
          }
        });
  }
  if (!walked.ok()) {
    spdlog::warn("block: queue freezes not read: {}", walked.error().message);
    return;
  }
  // A disk the queue does not name (before 5.15) is "unknown".
  auto device = [&](std::uint32_t dev) -> std::string {
    return dev == 0 ? "unknown" : devices_.name(dev);
  };
  for (const auto& [dev, h] : frozen) {
    out.histogram("cephscope_block_queue_frozen_seconds",
                  "Time a disk's request queue stayed frozen (freeze start to unfreeze).",
                  {{"device", device(dev)}}, h);
  }
  for (const auto& [dev, own] : freezers_) {
    for (const auto& comm : own) {
      freezes.try_emplace({dev, comm}, 0);
    }
  }
  for (const auto& [key, n] : freezes) {
    out.counter("cephscope_block_queue_freezes_total",
                "Queue freezes started, by the process that started them.",
                {{"device", device(key.first)}, {"process", key.second}}, static_cast<double>(n));
  }
}

Status BlockCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  if (stats_fd_ < 0) {
    return ok_status();
  }
  collect_freezes(out);
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // target, dev, op
  std::map<Key, block_stats> sums;
  auto add = [&](const block_stats_key& k, std::span<const block_stats> cpus) {
    auto& s = sums[{k.target, k.dev, k.op}];
    for (const auto& c : cpus) {
      add_block_stats(s, c);
    }
  };
  Status walked = for_each_percpu<block_stats_key, block_stats>(stats_fd_, add);
  if (walked.ok()) {
    walked = series_->for_each(add);  // a series counted in the hash, then in its slot
  }
  if (!walked.ok()) {
    return walked;
  }

  std::map<std::pair<std::uint32_t, std::uint32_t>, block_stats> per_device = retired_;
  std::map<std::pair<std::uint32_t, std::string>, std::uint64_t> layer_bytes;
  for (const auto& [key, s] : sums) {
    const auto [target, dev, op] = key;
    if (op >= BLOCK_OP_COUNT) {
      continue;
    }
    add_block_stats(per_device[{dev, op}], s);
    auto labels = targets.find(target);
    if (target == CEPHSCOPE_UNTRACKED || labels == targets.end()) {
      continue;
    }
    const Labels l = labels->second + Labels{{"device", devices_.name(dev)}, {"op", kOps[op]}};
    if (target_histograms_) {  // opt-in: the per-device series carry the latency
      out.histogram(
          "cephscope_block_target_submit_seconds",
          "Time bios of a tracked process waited for a request (queued to its allocation).", l,
          s.submit);
      out.histogram("cephscope_block_target_device_seconds",
                    "Device time (issue to complete) of requests submitted by a tracked process.",
                    l, s.device);
    }
    out.counter("cephscope_block_target_bytes_total",
                "Bytes of requests submitted by a tracked process.", l,
                static_cast<double>(s.bytes));
    if (op == BLOCK_OP_READ || op == BLOCK_OP_WRITE) {
      layer_bytes[{target, kOps[op]}] += s.bytes;
    }
  }
  for (const auto& [key, d] : per_device) {
    const Labels l{{"device", devices_.name(key.first)}, {"op", kOps[key.second]}};
    out.histogram(
        "cephscope_block_submit_seconds",
        "Time bios waited for a request: queued to its allocation (a frozen queue, no free tag).",
        l, d.submit);
    out.histogram("cephscope_block_queue_seconds", "Time requests spent queued (insert to issue).",
                  l, d.queue);
    out.counter("cephscope_block_bio_merges_total",
                "Bios merged into an existing request (no request, no submit sample).", l,
                static_cast<double>(d.merges));
    out.histogram("cephscope_block_device_seconds",
                  "Time requests spent in the device (issue to complete).", l, d.device);
    out.counter("cephscope_block_bytes_total", "Bytes of requests issued to the device.", l,
                static_cast<double>(d.bytes));
    out.counter("cephscope_block_errors_total", "Requests completed with an error.", l,
                static_cast<double>(d.errors));
  }
  for (const auto& [key, bytes] : layer_bytes) {
    const std::string direction = key.second;
    out.counter("cephscope_layer_bytes_total",
                "Bytes seen at each layer of the IO path, per target.",
                targets.at(key.first) + Labels{{"layer", "block"}, {"direction", direction}},
                static_cast<double>(bytes));
  }
  return ok_status();
}

}  // namespace

std::unique_ptr<Collector> make_block_collector(const CollectorContext& ctx) {
  return std::make_unique<BlockCollector>(ctx);
}

}  // namespace cephscope
