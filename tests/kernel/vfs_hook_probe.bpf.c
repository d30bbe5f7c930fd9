// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The kernel tests' own look at the vfs hooks, without the daemon: trivial fentry and kprobe
 * programs on functions the vfs collector hooks, counting the calls of one process. The tests
 * load and attach one flavour at a time and fire it with their own read(2), pwrite(2) and
 * fdatasync(2) (tests/kernel/vfs_hook_probe.cpp).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum { CALL_READ, CALL_WRITE, CALL_FSYNC, CALL_KINDS };

__u64 calls[CALL_KINDS];
const volatile __u32 target_tgid = 0;

static __always_inline int count(int kind)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&calls[kind], 1);
	return 0;
}

SEC("fentry/vfs_read")
int BPF_PROG(fentry_vfs_read)
{
	return count(CALL_READ);
}

SEC("fentry/vfs_write")
int BPF_PROG(fentry_vfs_write)
{
	return count(CALL_WRITE);
}

SEC("fentry/vfs_fsync_range")
int BPF_PROG(fentry_vfs_fsync_range)
{
	return count(CALL_FSYNC);
}

SEC("kprobe/vfs_read")
int BPF_KPROBE(kprobe_vfs_read)
{
	return count(CALL_READ);
}

SEC("kprobe/vfs_write")
int BPF_KPROBE(kprobe_vfs_write)
{
	return count(CALL_WRITE);
}

SEC("kprobe/vfs_fsync_range")
int BPF_KPROBE(kprobe_vfs_fsync_range)
{
	return count(CALL_FSYNC);
}
