// vfs collector: latency, bytes and errors of vfs_read/write/readv/writev/fsync_range per
// tracked process. fentry/fexit where the kernel allows it, kprobes otherwise; where neither
// works the collector says so on cephscope_probe_attached and the daemon runs on.
#include "collectors/collector.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "bpf/vfs.h"
#include "collectors/bpf_collector.h"
#include "collectors/op_stats.h"
#include "vfs.skel.h"

namespace cephscope {
namespace {

constexpr std::array<const char*, VFS_OP_COUNT> kOps = {"read", "write", "readv", "writev",
                                                        "fsync"};
constexpr std::array<const char*, VFS_OP_COUNT> kFunctions = {"vfs_read", "vfs_write", "vfs_readv",
                                                              "vfs_writev", "vfs_fsync_range"};

const char* direction(unsigned op) {
  switch (op) {
    case VFS_READ:
    case VFS_READV:
      return "read";
    case VFS_WRITE:
    case VFS_WRITEV:
      return "write";
    default:
      return nullptr;
  }
}

using VfsSkel = Skeleton<vfs_bpf, vfs_bpf__destroy>;

struct Flavour {
  const char* hook;
  const char* entry_prefix;  // program names: <prefix>_<function>
  const char* return_prefix;
};
constexpr Flavour kFentry{"fentry", "fentry", "fexit"};
constexpr Flavour kKprobe{"kprobe", "kprobe", "kretprobe"};

class VfsCollector final : public OpStatsCollector {
 public:
  explicit VfsCollector(const CollectorContext& ctx) { start(ctx); }
  [[nodiscard]] const char* name() const override { return "vfs"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override {
    return collect_op_stats({"cephscope_vfs", "vfs calls", "op", "vfs", kOps, direction}, buckets_,
                            out, targets);
  }

 private:
  void start(const CollectorContext& ctx);
  // Loads one flavour and attaches it.
  Status load(const Flavour& flavour, const CollectorContext& ctx);
  std::optional<Buckets> buckets_;  // collectors.vfs.buckets
};

Status VfsCollector::load(const Flavour& flavour, const CollectorContext& ctx) {
  VfsSkel skel;
  if (auto opened = open_skeleton(skel, vfs_bpf__open, ctx); !opened.ok()) {
    return opened;
  }
  const std::string entry = std::string(flavour.entry_prefix) + "_";
  const std::string ret = std::string(flavour.return_prefix) + "_";
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    const std::string n = bpf_program__name(prog);
    bpf_program__set_autoload(prog, n.starts_with(entry) || n.starts_with(ret));
  }
  if (auto loaded = load_skeleton(skel, vfs_bpf__load, flavour.hook); !loaded.ok()) {
    return loaded.error();
  }
  use_maps(skel->maps.vfs_stats, skel->maps.vfs_series_owner, skel->maps.vfs_series, VFS_OP_COUNT);
  vfs_bpf* raw = skel.release();
  adopt(
      raw->obj, [raw] { vfs_bpf__destroy(raw); }, flavour.hook);
  for (const char* fn : kFunctions) {
    attach(bpf_object__find_program_by_name(raw->obj, (entry + fn).c_str()), entry + fn);
    attach(bpf_object__find_program_by_name(raw->obj, (ret + fn).c_str()), ret + fn);
  }
  return ok_status();
}

void VfsCollector::start(const CollectorContext& ctx) {
  buckets_ = ctx.config.collectors.vfs.buckets;
  const Cause why =
      load_fentry_or_kprobe(ctx.config.collectors.vfs.hook, ctx.features, [&](const char* hook) {
        return load(std::string(hook) == "fentry" ? kFentry : kKprobe, ctx);
      });
  if (!why.ok()) {
    unavailable(why, std::vector<std::string>(kFunctions.begin(), kFunctions.end()));
  }
}

}  // namespace

std::unique_ptr<Collector> make_vfs_collector(const CollectorContext& ctx) {
  return std::make_unique<VfsCollector>(ctx);
}

}  // namespace cephscope
