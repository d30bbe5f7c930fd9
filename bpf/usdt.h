/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between usdt.bpf.c and daemon/collectors/usdt/usdt_collector.cpp. */
#ifndef CEPHSCOPE_USDT_H
#define CEPHSCOPE_USDT_H

#include "cephscope.h"

#define USDT_POINTS_MAX 4096	/* marker sites attached, all processes together */
#define USDT_SERIES_MAX 4096	/* (target, rule) series in the kernel */
#define USDT_INFLIGHT_MAX 16384 /* spans begun and not yet ended, all threads together */

/* What a hit at one attached marker site does. */
enum usdt_role {
	USDT_ROLE_NONE = 0, /* a freed point */
	USDT_ROLE_COUNT = 1,
	USDT_ROLE_START = 2,
	USDT_ROLE_END = 3,
};

/* How a span's key is read at its start and its end (profile/markers.h, decoded). */
enum usdt_key_kind {
	USDT_KEY_THREAD = 0, /* the thread: entry and return of one call */
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

/* usdt_points[cookie]: the cookie of each uprobe link is its point's index. */
struct usdt_point {
	__u32 target;
	__u16 rule; /* the config's usdt entry */
	__u8 role;
	__u8 pad;
	struct usdt_key_spec key;
};

struct usdt_series_key {
	__u32 target;
	__u32 rule;
};

/* A counted marker's hits; a span's ends that found their start, and their durations. */
struct usdt_series {
	__u64 events;
	struct hist span;
};

struct usdt_inflight_key {
	__u32 rule;
	__u32 tgid;
	__u64 key;
};

#endif
