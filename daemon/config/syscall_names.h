// The syscalls the syscall collector can trace, in the order of enum cephscope_syscall, and
// its default set: the storage syscalls (docs/collectors/syscall.md says why). The config
// checks collectors.syscall.syscalls against the first list.
#pragma once

#include <array>

namespace cephscope {

inline constexpr std::array<const char*, 22> kSyscallNames = {  // SYS_COUNT (bpf/syscall.h)
    "read",           "write",     "pread64",         "pwrite64",  "readv",
    "writev",         "preadv",    "pwritev",         "preadv2",   "pwritev2",
    "fsync",          "fdatasync", "sync_file_range", "io_submit", "io_getevents",
    "io_uring_enter", "sendto",    "sendmsg",         "sendmmsg",  "recvfrom",
    "recvmsg",        "recvmmsg"};

inline constexpr std::array<const char*, 11> kStorageSyscalls = {
    "pread64", "pwrite64",  "preadv",          "pwritev",   "preadv2",       "pwritev2",
    "fsync",   "fdatasync", "sync_file_range", "io_submit", "io_uring_enter"};

}  // namespace cephscope
