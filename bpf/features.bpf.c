// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Minimal programs the daemon loads one at a time to learn which hook types work here. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_tp_btf)
{
	return 0;
}

SEC("fentry/vfs_read")
int BPF_PROG(probe_fentry)
{
	return 0;
}
