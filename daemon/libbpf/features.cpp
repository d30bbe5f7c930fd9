#include "libbpf/features.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/fs.h"
#include "features.skel.h"
#include "libbpf/handles.h"

namespace cephscope {
namespace {

using FeaturesSkel = Skeleton<features_bpf, features_bpf__destroy>;

int silent(enum libbpf_print_level /*level*/, const char* /*format*/, va_list /*args*/) {
  return 0;
}

// Loads only `wanted` from the feature object; the load result is the answer. A refusal is
// an expected answer here, so libbpf's own complaint about it is not logged.
Feature try_load(bpf_program* (*pick)(features_bpf*)) {
  const libbpf_print_fn_t previous = libbpf_set_print(silent);
  struct Restore {
    libbpf_print_fn_t fn;
    ~Restore() { libbpf_set_print(fn); }
  } restore{previous};
  FeaturesSkel skel(features_bpf__open());
  if (!skel) {
    const int err = errno;
    return {false,
            {reason_of_errno(err, Reason::kLoadFailed),
             std::string("cannot open the feature probe: ") + std::strerror(err)}};
  }
  bpf_program* wanted = pick(skel.get());
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    bpf_program__set_autoload(prog, prog == wanted);
  }
  const int err = features_bpf__load(skel.get());
  if (err != 0) {
    return {false,
            {reason_of_errno(-err, Reason::kKernelFeatureMissing),
             std::string("program load failed: ") + std::strerror(-err)}};
  }
  return {true, {}};
}

Feature file_feature(const std::string& path, const std::string& missing) {
  const int err = path_errno(path);
  if (err == 0) {
    return {true, {}};
  }
  if (err == EACCES) {
    return {false,
            {Reason::kPermissionDenied,
             path + " is not readable (permission denied): needs CAP_DAC_READ_SEARCH"}};
  }
  return {false, {Reason::kKernelFeatureMissing, missing}};
}

// Linux 5.11 charges BPF memory to the memory cgroup (Roman Gushchin's series,
// lore.kernel.org/bpf/20201201215900.3569844-1-guro@fb.com); before, each map and program is
// charged to its user's RLIMIT_MEMLOCK, and one that does not fit fails with EPERM. Like
// libbpf (probe_memcg_account), tell the two apart by bpf_ktime_get_coarse_ns, a helper of
// the same release (d05512618056); on older kernels raise the limit as libbpf would, and
// say so when that is not allowed.
Feature bpf_memory_feature() {
  if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_SOCKET_FILTER, BPF_FUNC_ktime_get_coarse_ns, nullptr) ==
      1) {
    return {true, {}};
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return {true, {}};
  }
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_MEMLOCK, &unlimited) == 0) {
    return {true, {}};
  }
  return {false,
          {Reason::kResourceLimit,
           "this kernel charges BPF memory to RLIMIT_MEMLOCK (Linux before 5.11), which is " +
               std::to_string(limit.rlim_cur / 1024) +
               " KiB and cannot be raised: needs CAP_SYS_RESOURCE or LimitMEMLOCK=infinity"}};
}

}  // namespace

KernelFeatures KernelFeatures::probe(const std::string& tracefs_dir) {
  KernelFeatures f;
  utsname u{};
  if (uname(&u) == 0) {
    f.kernel_release = u.release;
  }
  f.btf =
      file_feature("/sys/kernel/btf/vmlinux", "the kernel has no BTF (/sys/kernel/btf/vmlinux)");
  f.tracefs = file_feature(tracefs_dir + "/events", "tracefs is not mounted at " + tracefs_dir);
  if (f.btf.available) {
    f.tp_btf = try_load([](features_bpf* s) { return s->progs.probe_tp_btf; });
    f.fentry = try_load([](features_bpf* s) { return s->progs.probe_fentry; });
  } else {
    f.tp_btf = f.fentry = {false, {Reason::kKernelFeatureMissing, "needs kernel BTF"}};
  }
  // libbpf attaches kprobes through the kprobe PMU, or through tracefs on old kernels.
  if (path_exists("/sys/bus/event_source/devices/kprobe/type") ||
      path_exists(tracefs_dir + "/kprobe_events")) {
    f.kprobe = {true, {}};
  } else {
    f.kprobe = {false,
                {Reason::kKernelFeatureMissing,
                 "the kernel has no kprobes (no kprobe PMU, no kprobe_events)"}};
  }
  f.bpf_memory = bpf_memory_feature();
  std::ifstream stats("/proc/sys/kernel/bpf_stats_enabled");
  int enabled = 0;
  if (stats >> enabled && enabled == 1) {
    f.bpf_stats = {true, {}};
  } else {
    f.bpf_stats = {
        false,
        {Reason::kDisabled, "kernel.bpf_stats_enabled is 0: program run time is not counted"}};
  }
  return f;
}

std::vector<int> tp_btf_arg_counts(const std::vector<std::string>& tracepoints) {
  std::vector<int> counts(tracepoints.size(), -1);
  std::unique_ptr<btf, decltype(&btf__free)> vmlinux(btf__load_vmlinux_btf(), btf__free);
  if (!vmlinux) {
    return counts;
  }
  for (std::size_t i = 0; i < tracepoints.size(); ++i) {
    const std::string name = "btf_trace_" + tracepoints[i];
    const int id = btf__find_by_name_kind(vmlinux.get(), name.c_str(), BTF_KIND_TYPEDEF);
    if (id < 0) {
      continue;
    }
    const btf_type* ptr = btf__type_by_id(vmlinux.get(), btf__type_by_id(vmlinux.get(), id)->type);
    if (ptr == nullptr || !btf_is_ptr(ptr)) {
      continue;
    }
    const btf_type* proto = btf__type_by_id(vmlinux.get(), ptr->type);
    if (proto != nullptr && btf_is_func_proto(proto) && btf_vlen(proto) >= 1) {
      counts[i] = btf_vlen(proto) - 1;
    }
  }
  return counts;
}

std::vector<bool> kernel_has_functions(const std::vector<std::string>& functions) {
  std::vector<bool> found(functions.size(), false);
  std::unique_ptr<btf, decltype(&btf__free)> vmlinux(btf__load_vmlinux_btf(), btf__free);
  if (!vmlinux) {
    return found;
  }
  for (std::size_t i = 0; i < functions.size(); ++i) {
    found[i] = btf__find_by_name_kind(vmlinux.get(), functions[i].c_str(), BTF_KIND_FUNC) >= 0;
  }
  return found;
}

}  // namespace cephscope
