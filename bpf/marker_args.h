/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A static marker's argument as a program reads it at a hit (profile/markers.h, decoded by
 * daemon/collectors/marker_args.cpp): shared by the usdt and rados objects and the daemon.
 */
#ifndef CEPHSCOPE_MARKER_ARGS_H
#define CEPHSCOPE_MARKER_ARGS_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* user space; BPF programs get the types from vmlinux.h */
#endif

enum usdt_key_kind {
	USDT_KEY_THREAD = 0, /* no argument: the thread (entry and return of one call) */
	USDT_KEY_REGISTER = 1,
	USDT_KEY_MEMORY = 2, /* SIZE bytes at the register's value + value */
	USDT_KEY_CONSTANT = 3,
};

struct usdt_key_spec {
	__u8 kind;
	__u8 size; /* 1, 2, 4 or 8 */
	__u8 is_signed;
	__u8 pad;
	__u32 reg_off; /* offset of the register in struct pt_regs */
	__s64 value;
};

#endif
