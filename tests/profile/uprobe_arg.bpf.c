// SPDX-License-Identifier: GPL-2.0
// Test program: counts hits of one uprobe and sums one argument, read from the location a
// probe profile gives (a register, or memory at register + offset), as the daemon will.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "uprobe_arg.h"

const volatile int arg_kind = ARG_REGISTER;
const volatile int arg_reg = 0; /* DWARF register number */
const volatile long arg_offset = 0;

__u64 hits = 0;
__u64 sum = 0;

static __always_inline __u64 dwarf_reg(struct pt_regs *regs, int reg)
{
	switch (reg) {
	case 0:
		return regs->ax;
	case 1:
		return regs->dx;
	case 2:
		return regs->cx;
	case 3:
		return regs->bx;
	case 4:
		return regs->si;
	case 5:
		return regs->di;
	case 6:
		return regs->bp;
	case 7:
		return regs->sp;
	case 8:
		return regs->r8;
	case 9:
		return regs->r9;
	case 10:
		return regs->r10;
	case 11:
		return regs->r11;
	case 12:
		return regs->r12;
	case 13:
		return regs->r13;
	case 14:
		return regs->r14;
	case 15:
		return regs->r15;
	}
	return 0;
}

SEC("uprobe")
int on_entry(struct pt_regs *ctx)
{
	struct pt_regs regs;
	__u64 v;

	/* A copy: the verifier refuses ctx loads at the variable offset a switch compiles to. */
	if (bpf_probe_read_kernel(&regs, sizeof(regs), ctx))
		return 0;
	v = dwarf_reg(&regs, arg_reg);

	if (arg_kind == ARG_MEMORY) {
		__u64 addr = v + arg_offset;

		if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
			return 0;
	}
	__sync_fetch_and_add(&hits, 1);
	__sync_fetch_and_add(&sum, v);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
