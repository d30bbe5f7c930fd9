// The BPF programs and links one process holds, and whether they still exist: how tests tell
// the daemon's own kernel objects from those of other BPF users of the machine.
#pragma once

#include <linux/types.h>
#include <sys/types.h>

#include <set>

namespace cephscope::test {

struct HeldIds {
  std::set<__u32> progs;
  std::set<__u32> links;
};

// The "prog_id:" and "link_id:" lines of /proc/PID/fdinfo/* (a link's fdinfo names its program
// too).
HeldIds held_by(pid_t pid);

// Every link id the kernel knows now.
std::set<__u32> link_ids();

// False once the kernel has freed the program (ENOENT); true while it exists or cannot tell.
bool prog_exists(__u32 id);

}  // namespace cephscope::test
