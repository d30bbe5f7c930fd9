// The capabilities the daemon keeps once started. What only start-up needs (mounting tracefs,
// raising RLIMIT_MEMLOCK) is dropped from every set before the first thread starts, so that no
// thread and no exec of the daemon ever holds it again.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace cephscope {

using CapabilityMask = std::uint64_t;

constexpr CapabilityMask capability_bit(int cap) {
  return CapabilityMask{1} << cap;
}

// What the running daemon keeps, always: load programs and maps (CAP_BPF), attach tracing
// programs and perf events (CAP_PERFMON), read tracefs (CAP_DAC_READ_SEARCH), read other
// users' /proc/PID/{exe,maps,root} (CAP_SYS_PTRACE), and stat /proc/PID/map_files, which tells
// a container's mapped executable from a replaced one (CAP_CHECKPOINT_RESTORE, 5.9 and later).
CapabilityMask running_set();

// CAP_SYS_ADMIN is kept only where the kernel refuses perf events without it: every
// perf_event_open on Debian's kernels at kernel.perf_event_paranoid=3, and uprobes (the OSD
// collector) on kernels whose uprobe PMU asks for it. Probed with CAP_SYS_ADMIN out of the
// effective set for a moment: a dummy software event, and a uprobe on a path that names no
// file (the PMU checks the capability first). False when the daemon does not hold it.
bool perf_events_need_sys_admin();

// The sets of this thread: "bpf,perfmon,..." in capability order; "none" when empty.
std::string capability_names(CapabilityMask mask);
CapabilityMask effective_capabilities();

struct Dropped {
  CapabilityMask kept = 0;     // effective and permitted from now on
  CapabilityMask dropped = 0;  // held before, gone now
};

// Keeps `keep` (and only what the daemon held of it) in the effective and permitted sets,
// empties the inheritable and ambient sets, and drops the rest from the bounding set where the
// daemon may (CAP_SETPCAP). Call before any thread starts: capabilities are per thread.
Result<Dropped> drop_to(CapabilityMask keep);

// Raises the soft limit of open files to the hard one (as a unit's LimitNOFILE, or a
// container runtime, set it): the endpoint's connections and a uprobe link per probe and
// process need more than the usual 1,024. Returns the soft limit now.
std::uint64_t raise_open_files_limit();

}  // namespace cephscope
