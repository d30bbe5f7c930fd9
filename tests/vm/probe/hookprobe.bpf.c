// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Hook probe of the kernel-matrix harness: one trivial program per hook kind the collectors
// use. cephscope_vm_hookprobe loads and attaches them one at a time, triggers the hooked
// paths and reads the hit counters, proving which hooks really work on a guest kernel.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum {
	HIT_FENTRY,
	HIT_FEXIT,
	HIT_KPROBE,
	HIT_KRETPROBE,
	HIT_TP_BTF_BLOCK,
	HIT_TP_BLOCK,
	HIT_TP_SYSCALL,
	HIT_MAX,
};

__u64 hits[HIT_MAX];
__u32 target_tgid;

static __always_inline int count_own(int i)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&hits[i], 1);
	return 0;
}

SEC("fentry/vfs_read")
int BPF_PROG(probe_fentry_vfs_read)
{
	return count_own(HIT_FENTRY);
}

SEC("fexit/vfs_read")
int BPF_PROG(probe_fexit_vfs_read)
{
	return count_own(HIT_FEXIT);
}

SEC("kprobe/vfs_read")
int probe_kprobe_vfs_read(struct pt_regs *ctx)
{
	return count_own(HIT_KPROBE);
}

SEC("kretprobe/vfs_read")
int probe_kretprobe_vfs_read(struct pt_regs *ctx)
{
	return count_own(HIT_KRETPROBE);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(probe_tp_btf_block_rq_complete)
{
	__sync_fetch_and_add(&hits[HIT_TP_BTF_BLOCK], 1);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int probe_tp_block_rq_complete(void *ctx)
{
	__sync_fetch_and_add(&hits[HIT_TP_BLOCK], 1);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_read")
int probe_tp_sys_enter_read(void *ctx)
{
	return count_own(HIT_TP_SYSCALL);
}
