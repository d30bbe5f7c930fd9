// What this kernel lets cephscope do, probed once at start and passed to every collector.
#pragma once

#include <string>
#include <vector>

#include "core/reason.h"

namespace cephscope {

struct Feature {
  bool available = false;
  Cause why;  // why not, when unavailable
};

struct KernelFeatures {
  std::string kernel_release;
  Feature btf;        // /sys/kernel/btf/vmlinux
  Feature tracefs;    // tracepoint and uprobe attach by event id
  Feature tp_btf;     // BTF-typed tracepoints
  Feature fentry;     // fentry/fexit trampolines
  Feature kprobe;     // kprobe PMU or legacy kprobe_events
  Feature bpf_stats;  // kernel.bpf_stats_enabled (run time per program)
  // Room for BPF maps and programs: charged to the memory cgroup (5.11 and later), or to an
  // RLIMIT_MEMLOCK that is unlimited or could be raised (earlier kernels).
  Feature bpf_memory;

  static KernelFeatures probe(const std::string& tracefs_dir);
};

// How many arguments the kernel hands tp_btf programs of each tracepoint: its
// btf_trace_NAME prototype in the kernel's BTF, less the leading void *. -1 where the BTF
// has no such prototype.
std::vector<int> tp_btf_arg_counts(const std::vector<std::string>& tracepoints);

// Which of `functions` the running kernel's BTF has (fentry can attach to those only).
std::vector<bool> kernel_has_functions(const std::vector<std::string>& functions);

}  // namespace cephscope
