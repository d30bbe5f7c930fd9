// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The kernel tests' own object for the hook chooser (tests/kernel/test_hook_choice.cpp): a
 * program that attaches on every kernel, counting the test process's getppid(2) calls, and one
 * on a tracepoint no kernel has, which loads and is then refused at attach.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

__u64 calls;
const volatile __u32 target_tgid = 0;

SEC("tracepoint/syscalls/sys_enter_getppid")
int attaches(void *ctx)
{
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == target_tgid)
		__sync_fetch_and_add(&calls, 1);
	return 0;
}

SEC("tracepoint/cephscope_test/no_such_event")
int refused(void *ctx)
{
	return 0;
}
