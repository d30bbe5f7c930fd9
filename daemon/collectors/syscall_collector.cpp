// syscall collector: per tracked process and syscall, latency histogram, bytes and errors.
#include "collectors/syscall_collector.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "bpf/syscall.h"
#include "collectors/bpf_collector.h"
#include "collectors/op_stats.h"
#include "config/syscall_names.h"
#include "core/fs.h"
#include "syscall.skel.h"

namespace cephscope {
namespace {

constexpr const auto& kNames = kSyscallNames;
static_assert(kNames.size() == SYS_COUNT);

const char* direction(unsigned sc) {
  switch (sc) {
    case SYS_READ:
    case SYS_PREAD64:
    case SYS_READV:
    case SYS_PREADV:
    case SYS_PREADV2:
    case SYS_RECVFROM:
    case SYS_RECVMSG:
      return "read";
    case SYS_WRITE:
    case SYS_PWRITE64:
    case SYS_WRITEV:
    case SYS_PWRITEV:
    case SYS_PWRITEV2:
    case SYS_SENDTO:
    case SYS_SENDMSG:
      return "write";
    default:
      return nullptr;  // no byte count in the return value
  }
}

using SyscallSkel = Skeleton<syscall_bpf, syscall_bpf__destroy>;

class SyscallCollector final : public OpStatsCollector {
 public:
  explicit SyscallCollector(const CollectorContext& ctx) { start(ctx); }
  [[nodiscard]] const char* name() const override { return "syscall"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;

 private:
  void start(const CollectorContext& ctx);
  std::string buckets_;  // collectors.syscall.buckets
};

void SyscallCollector::start(const CollectorContext& ctx) {
  buckets_ = ctx.config.collectors.syscall.buckets;
  const auto& wanted = ctx.config.collectors.syscalls;  // collectors.syscall.syscalls
  const std::vector<std::string> all(wanted.begin(), wanted.end());
  if (!ctx.features.tracefs.available) {
    unavailable(ctx.features.tracefs.why, all);
    return;
  }
  SyscallSkel skel;
  if (auto opened = open_skeleton(skel, syscall_bpf__open, ctx); !opened.ok()) {
    unavailable(cause_of(opened.error(), Reason::kLoadFailed), all);
    return;
  }
  // A syscall this kernel does not have (or has no tracepoint for) is left out, not fatal;
  // one the config does not ask for is not loaded.
  std::vector<bool> present(SYS_COUNT);
  std::vector<bool> asked(SYS_COUNT);
  for (unsigned i = 0; i < SYS_COUNT; ++i) {
    asked[i] = std::find(wanted.begin(), wanted.end(), kNames[i]) != wanted.end();
    present[i] =
        asked[i] && path_exists(ctx.tracefs_dir + "/events/syscalls/sys_enter_" + kNames[i]);
    for (const char* side : {"enter_", "exit_"}) {
      auto* prog =
          bpf_object__find_program_by_name(skel->obj, (std::string(side) + kNames[i]).c_str());
      bpf_program__set_autoload(prog, present[i]);
    }
  }
  if (const int err = syscall_bpf__load(skel.get()); err != 0) {
    unavailable({reason_of_errno(-err, Reason::kLoadFailed),
                 std::string("BPF load failed: ") + std::strerror(-err)},
                all);
    return;
  }
  use_maps(skel->maps.syscall_stats, skel->maps.syscall_series_owner, skel->maps.syscall_series,
           SYS_COUNT);
  syscall_bpf* raw = skel.release();
  adopt(
      raw->obj, [raw] { syscall_bpf__destroy(raw); }, "tracepoint");
  for (unsigned i = 0; i < SYS_COUNT; ++i) {
    if (!asked[i]) {
      continue;
    }
    if (!present[i]) {
      ProbeStatus missing{std::string("sys_enter_") + kNames[i],
                          "",
                          false,
                          {Reason::kKernelFeatureMissing, "no such tracepoint on this kernel"}};
      unavailable_probe(missing);
      continue;
    }
    for (const char* side : {"enter_", "exit_"}) {
      const std::string prog_name = std::string(side) + kNames[i];
      attach(bpf_object__find_program_by_name(raw->obj, prog_name.c_str()),
             std::string("sys_") + prog_name);
    }
  }
}

Status SyscallCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  return collect_op_stats(
      {"cephscope_syscall", "syscalls", "syscall", "syscall", kNames, direction}, buckets_, out,
      targets);
}

}  // namespace

const char* syscall_name(unsigned index) {
  return index < SYS_COUNT ? kNames[index] : nullptr;
}

std::unique_ptr<Collector> make_syscall_collector(const CollectorContext& ctx) {
  return std::make_unique<SyscallCollector>(ctx);
}

}  // namespace cephscope
