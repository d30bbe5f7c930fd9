// syscall collector: per tracked process and syscall, latency histogram, bytes and errors.
#include "collectors/collector.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "bpf/syscall.h"
#include "collectors/bpf_collector.h"
#include "collectors/op_stats.h"
#include "config/syscall_names.h"
#include "core/fs.h"
#include "libbpf/features.h"
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

// The kernel function behind each syscall, as fentry sees it: the architecture's wrapper.
#if defined(__x86_64__)
constexpr const char* kSyscallFunctionPrefix = "__x64_sys_";
#elif defined(__aarch64__)
constexpr const char* kSyscallFunctionPrefix = "__arm64_sys_";
#else
constexpr const char* kSyscallFunctionPrefix = nullptr;  // fentry: no known wrapper names
#endif

// One way of hooking a syscall's entry and exit: the programs (<prefix><syscall>) and the
// probes they are reported as (<probe prefix><syscall>).
struct Flavour {
  const char* hook;
  std::array<const char*, 2> programs;
  std::array<const char*, 2> probes;
};
constexpr Flavour kFentry{"fentry", {"fentry_", "fexit_"}, {"fentry_sys_", "fexit_sys_"}};
constexpr Flavour kTracepoint{"tracepoint", {"enter_", "exit_"}, {"sys_enter_", "sys_exit_"}};

class SyscallCollector final : public OpStatsCollector {
 public:
  explicit SyscallCollector(const CollectorContext& ctx) { start(ctx); }
  [[nodiscard]] const char* name() const override { return "syscall"; }
  Status collect(MetricSink& out, const TargetLabelMap& targets) override;

 private:
  void start(const CollectorContext& ctx);
  // Loads FLAVOUR's programs for the syscalls the config asks for and attaches them.
  Status load(const Flavour& flavour, const CollectorContext& ctx);
  // Which of the asked syscalls this kernel has, as FLAVOUR hooks them.
  static std::vector<bool> present(const Flavour& flavour, const CollectorContext& ctx,
                                   const std::vector<bool>& asked);
  std::optional<Buckets> buckets_;  // collectors.syscall.buckets
};

std::vector<bool> SyscallCollector::present(const Flavour& flavour, const CollectorContext& ctx,
                                            const std::vector<bool>& asked) {
  std::vector<bool> out(SYS_COUNT);
  if (&flavour == &kTracepoint) {
    for (unsigned i = 0; i < SYS_COUNT; ++i) {
      out[i] = asked[i] && path_exists(ctx.tracefs_dir + "/events/syscalls/sys_enter_" + kNames[i]);
    }
    return out;
  }
  std::vector<std::string> functions;
  functions.reserve(kNames.size());
  for (const char* n : kNames) {
    functions.push_back(std::string(kSyscallFunctionPrefix) + n);
  }
  const std::vector<bool> in_btf = kernel_has_functions(functions);
  for (unsigned i = 0; i < SYS_COUNT; ++i) {
    out[i] = asked[i] && in_btf[i];
  }
  return out;
}

Status SyscallCollector::load(const Flavour& flavour, const CollectorContext& ctx) {
  const auto& wanted = ctx.config.collectors.syscalls;  // collectors.syscall.syscalls
  if (&flavour == &kFentry && kSyscallFunctionPrefix == nullptr) {
    return error_with(Reason::kKernelFeatureMissing, ErrorKind::kUnsupported,
                      "fentry: this build knows no syscall function names on its architecture");
  }
  std::vector<bool> asked(SYS_COUNT);
  for (unsigned i = 0; i < SYS_COUNT; ++i) {
    asked[i] = std::find(wanted.begin(), wanted.end(), kNames[i]) != wanted.end();
  }
  const std::vector<bool> have = present(flavour, ctx, asked);
  if (&flavour == &kFentry && std::ranges::none_of(have, std::identity{}) &&
      std::ranges::any_of(asked, std::identity{})) {
    return error_with(Reason::kKernelFeatureMissing, ErrorKind::kUnsupported,
                      std::string("fentry: no ") + kSyscallFunctionPrefix +
                          "* function of the asked syscalls in the kernel's BTF");
  }
  SyscallSkel skel;
  if (auto opened = open_skeleton(skel, syscall_bpf__open, ctx); !opened.ok()) {
    return opened;
  }
  // Only the asked syscalls this kernel has are loaded, in this flavour only.
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    bpf_program__set_autoload(prog, false);
  }
  for (unsigned i = 0; i < SYS_COUNT; ++i) {
    for (const char* side : flavour.programs) {
      prog = bpf_object__find_program_by_name(skel->obj, (std::string(side) + kNames[i]).c_str());
      bpf_program__set_autoload(prog, have[i]);
      if (have[i] && &flavour == &kFentry) {
        const std::string fn = std::string(kSyscallFunctionPrefix) + kNames[i];
        if (const int err = bpf_program__set_attach_target(prog, 0, fn.c_str()); err != 0) {
          return error_with(Reason::kLoadFailed, ErrorKind::kSystem,
                            fn + ": " + std::strerror(-err), -err);
        }
      }
    }
  }
  if (auto loaded = load_skeleton(skel, syscall_bpf__load, flavour.hook); !loaded.ok()) {
    return loaded.error();
  }
  use_maps(skel->maps.syscall_stats, skel->maps.syscall_series_owner, skel->maps.syscall_series,
           SYS_COUNT);
  syscall_bpf* raw = skel.release();
  adopt(
      raw->obj, [raw] { syscall_bpf__destroy(raw); }, flavour.hook);
  for (unsigned i = 0; i < SYS_COUNT; ++i) {
    if (!asked[i]) {
      continue;
    }
    if (!have[i]) {
      ProbeStatus missing{std::string(flavour.probes[0]) + kNames[i],
                          "",
                          false,
                          {Reason::kKernelFeatureMissing,
                           &flavour == &kFentry ? "no such function in this kernel's BTF"
                                                : "no such tracepoint on this kernel"}};
      unavailable_probe(missing);
      continue;
    }
    for (std::size_t side = 0; side < 2; ++side) {
      attach(bpf_object__find_program_by_name(
                 raw->obj, (std::string(flavour.programs[side]) + kNames[i]).c_str()),
             std::string(flavour.probes[side]) + kNames[i]);
    }
  }
  return ok_status();
}

void SyscallCollector::start(const CollectorContext& ctx) {
  buckets_ = ctx.config.collectors.syscall.buckets;
  const Cause why =
      load_first_hook(ctx.config.collectors.syscall.hook,
                      {{"fentry", ctx.features.fentry}, {"tracepoint", ctx.features.tracefs}},
                      [&](const char* hook) {
                        return load(std::string(hook) == "fentry" ? kFentry : kTracepoint, ctx);
                      });
  if (!why.ok()) {
    const auto& wanted = ctx.config.collectors.syscalls;
    unavailable(why, std::vector<std::string>(wanted.begin(), wanted.end()));
  }
}

Status SyscallCollector::collect(MetricSink& out, const TargetLabelMap& targets) {
  return collect_op_stats(
      {"cephscope_syscall", "syscalls", "syscall", "syscall", kNames, direction}, buckets_, out,
      targets);
}

}  // namespace

std::unique_ptr<Collector> make_syscall_collector(const CollectorContext& ctx) {
  return std::make_unique<SyscallCollector>(ctx);
}

}  // namespace cephscope
