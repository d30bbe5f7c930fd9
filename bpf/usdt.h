/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between usdt.bpf.c and daemon/collectors/usdt/usdt_collector.cpp. */
#ifndef CEPHSCOPE_USDT_H
#define CEPHSCOPE_USDT_H

#include "cephscope.h"
#include "marker_args.h"

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
