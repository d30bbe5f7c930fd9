// What this kernel lets cephscope do, probed once at start and passed to every collector.
#pragma once

#include <string>

namespace cephscope {

struct Feature {
  bool available = false;
  std::string reason;  // why not, when unavailable
};

struct KernelFeatures {
  std::string kernel_release;
  Feature btf;        // /sys/kernel/btf/vmlinux
  Feature tracefs;    // tracepoint and uprobe attach by event id
  Feature tp_btf;     // BTF-typed tracepoints
  Feature fentry;     // fentry/fexit trampolines
  Feature kprobe;     // kprobe PMU or legacy kprobe_events
  Feature bpf_stats;  // kernel.bpf_stats_enabled (run time per program)

  static KernelFeatures probe(const std::string& tracefs_dir);
};

}  // namespace cephscope
