#include "app/privileges.h"

#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace cephscope {
namespace {

// Named here, not taken from <linux/capability.h>: older headers lack the newest, and a kernel
// that lacks one simply never grants it (PR_CAPBSET_READ says EINVAL).
constexpr int kCapBpf = 39;
constexpr int kCapPerfmon = 38;
constexpr int kCapCheckpointRestore = 40;
constexpr int kLastCapNamed = 40;

struct CapSets {
  CapabilityMask effective = 0;
  CapabilityMask permitted = 0;
  CapabilityMask inheritable = 0;
};

Result<CapSets> get_sets() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  if (syscall(SYS_capget, &header, data.data()) != 0) {
    return errno_error("capget", errno);
  }
  auto join = [](std::uint32_t lo, std::uint32_t hi) {
    return CapabilityMask{lo} | (CapabilityMask{hi} << 32);
  };
  return CapSets{join(data[0].effective, data[1].effective),
                 join(data[0].permitted, data[1].permitted),
                 join(data[0].inheritable, data[1].inheritable)};
}

Status set_sets(const CapSets& s) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i].effective = static_cast<std::uint32_t>(s.effective >> (32 * i));
    data[i].permitted = static_cast<std::uint32_t>(s.permitted >> (32 * i));
    data[i].inheritable = static_cast<std::uint32_t>(s.inheritable >> (32 * i));
  }
  if (syscall(SYS_capset, &header, data.data()) != 0) {
    return errno_error("capset", errno);
  }
  return ok_status();
}

// Names as capabilities(7) spells them, lower case without CAP_.
constexpr std::array<const char*, kLastCapNamed + 1> kNames = {"chown",
                                                               "dac_override",
                                                               "dac_read_search",
                                                               "fowner",
                                                               "fsetid",
                                                               "kill",
                                                               "setgid",
                                                               "setuid",
                                                               "setpcap",
                                                               "linux_immutable",
                                                               "net_bind_service",
                                                               "net_broadcast",
                                                               "net_admin",
                                                               "net_raw",
                                                               "ipc_lock",
                                                               "ipc_owner",
                                                               "sys_module",
                                                               "sys_rawio",
                                                               "sys_chroot",
                                                               "sys_ptrace",
                                                               "sys_pacct",
                                                               "sys_admin",
                                                               "sys_boot",
                                                               "sys_nice",
                                                               "sys_resource",
                                                               "sys_time",
                                                               "sys_tty_config",
                                                               "mknod",
                                                               "lease",
                                                               "audit_write",
                                                               "audit_control",
                                                               "setfcap",
                                                               "mac_override",
                                                               "mac_admin",
                                                               "syslog",
                                                               "wake_alarm",
                                                               "block_suspend",
                                                               "audit_read",
                                                               "perfmon",
                                                               "bpf",
                                                               "checkpoint_restore"};

int perf_dummy_event() {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

// The uprobe PMU checks the caller's capability before it looks at the file: on a path that
// names no file, EACCES means refused for want of it, anything else means allowed. -1 when
// the kernel has no uprobe PMU (libbpf then goes through tracefs, as for any tracepoint).
int uprobe_pmu_refusal() {
  int type = -1;
  std::FILE* f = std::fopen("/sys/bus/event_source/devices/uprobe/type", "re");
  if (f == nullptr) {
    return -1;
  }
  const bool read = std::fscanf(f, "%d", &type) == 1;
  std::fclose(f);
  if (!read) {
    return -1;
  }
  static const char kNoFile[] = "/nonexistent/cephscope-capability-probe";
  perf_event_attr attr{};
  attr.type = static_cast<std::uint32_t>(type);
  attr.size = sizeof attr;
  attr.config1 = reinterpret_cast<std::uintptr_t>(kNoFile);  // uprobe_path
  attr.config2 = 0;                                          // probe_offset
  const int fd =
      static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
  const int err = errno;
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return err == EACCES || err == EPERM ? 1 : 0;
}

}  // namespace

CapabilityMask running_set() {
  return capability_bit(kCapBpf) | capability_bit(kCapPerfmon) |
         capability_bit(CAP_DAC_READ_SEARCH) | capability_bit(CAP_SYS_PTRACE) |
         capability_bit(kCapCheckpointRestore);
}

std::string capability_names(CapabilityMask mask) {
  std::string out;
  for (int cap = 0; cap < 64; ++cap) {
    if ((mask & capability_bit(cap)) == 0) {
      continue;
    }
    out += out.empty() ? "" : ",";
    out +=
        cap <= kLastCapNamed ? kNames[static_cast<std::size_t>(cap)] : "cap_" + std::to_string(cap);
  }
  return out.empty() ? "none" : out;
}

CapabilityMask effective_capabilities() {
  const auto sets = get_sets();
  return sets.ok() ? sets->effective : 0;
}

bool perf_events_need_sys_admin() {
  const auto sets = get_sets();
  if (!sets.ok() || (sets->effective & capability_bit(CAP_SYS_ADMIN)) == 0) {
    return false;  // nothing to keep
  }
  CapSets without = *sets;
  without.effective &= ~capability_bit(CAP_SYS_ADMIN);
  if (!set_sets(without).ok()) {
    return true;  // cannot try without it: keep it
  }
  const int fd = perf_dummy_event();
  const int err = errno;
  if (fd >= 0) {
    close(fd);
  }
  const bool uprobes_refused = uprobe_pmu_refusal() == 1;
  // Back to the effective set as it was (still permitted, so this cannot fail for lack of
  // privilege); a failure keeps CAP_SYS_ADMIN out of the effective set, which the caller's
  // drop_to() then settles.
  (void)set_sets(*sets);
  return uprobes_refused || (fd < 0 && (err == EACCES || err == EPERM));
}

Result<Dropped> drop_to(CapabilityMask keep) {
  auto before = get_sets();
  if (!before.ok()) {
    return before.error();
  }
  // The bounding set first, while CAP_SETPCAP (when held) is still effective. A daemon started
  // without it (an unprivileged user with exactly the documented set) has a bounding set its
  // starter already limited.
  if ((before->effective & capability_bit(CAP_SETPCAP)) != 0) {
    for (int cap = 0; cap < 64; ++cap) {  // the kernel says EINVAL past its last
      if ((keep & capability_bit(cap)) == 0 && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
          prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        return errno_error("PR_CAPBSET_DROP " + capability_names(capability_bit(cap)), errno);
      }
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return errno_error("PR_CAP_AMBIENT", errno);
  }
  const CapabilityMask kept = before->permitted & keep;
  if (auto s = set_sets(CapSets{before->effective & kept, kept, 0}); !s.ok()) {
    return s.error();
  }
  return Dropped{kept, before->permitted & ~kept};
}

std::uint64_t raise_open_files_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return 0;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      limit = raised;
    }
  }
  return limit.rlim_cur;
}

}  // namespace cephscope
