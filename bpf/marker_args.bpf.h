/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading a static marker's argument at a hit, by its decoded spec (marker_args.h). */
#ifndef CEPHSCOPE_MARKER_ARGS_BPF_H
#define CEPHSCOPE_MARKER_ARGS_BPF_H

#include "marker_args.h"

static __always_inline __u64 register_value(struct pt_regs *ctx, __u32 off)
{
	__u64 v = 0;

	if (off > sizeof(struct pt_regs) - sizeof(v))
		return 0;
	bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + off);
	return v;
}

/* The argument K describes, at its own width; FALLBACK for USDT_KEY_THREAD. */
static __always_inline __u64 marker_arg(struct pt_regs *ctx, const struct usdt_key_spec *k,
					__u64 fallback)
{
	__u32 shift = 64 - 8 * (k->size & 0xf);
	__u64 v = 0;

	switch (k->kind) {
	case USDT_KEY_REGISTER:
		v = register_value(ctx, k->reg_off);
		break;
	case USDT_KEY_MEMORY:
		bpf_probe_read_user(&v, sizeof(v),
				    (void *)(register_value(ctx, k->reg_off) + k->value));
		break;
	case USDT_KEY_CONSTANT:
		v = (__u64)k->value;
		break;
	default:
		return fallback;
	}
	if (shift >= 64)
		return v;
	/* The argument's own width: a 4-byte argument in a 64-bit register or 8 read bytes. */
	return k->is_signed ? (__u64)((__s64)(v << shift) >> shift) : (v << shift) >> shift;
}

#endif
