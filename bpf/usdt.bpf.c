// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * usdt collector: static markers (.note.stapsdt) of any program the config names, counted and
 * paired into spans in the kernel. One program serves every marker site: the daemon attaches
 * it per process at each site's file offset (with the marker's semaphore as the uprobe's
 * reference counter, so the program computes its arguments only while probed), and the
 * link's cookie indexes usdt_points, which says whose site it is and what a hit does.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "usdt.h"
#include "histogram.h"
#include "maps.bpf.h"
#include "marker_args.bpf.h"
#include "targets.bpf.h" /* every object declares it (the daemon shares one) */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, USDT_POINTS_MAX);
	__type(key, __u32);
	__type(value, struct usdt_point);
} usdt_points SEC(".maps");

/* Preallocated within a budget per CPU by the daemon (size_percpu_hashes). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, USDT_SERIES_MAX);
	__type(key, struct usdt_series_key);
	__type(value, struct usdt_series);
} usdt_series SEC(".maps");

/* Span starts: LRU, so a start whose end never comes is evicted, never a leak. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, USDT_INFLIGHT_MAX);
	__type(key, struct usdt_inflight_key);
	__type(value, __u64);
} usdt_inflight SEC(".maps");

static const struct usdt_series zero_series;

SEC("uprobe")
int usdt_hit(struct pt_regs *ctx)
{
	__u32 index = (__u32)bpf_get_attach_cookie(ctx);
	struct usdt_point *p = bpf_map_lookup_elem(&usdt_points, &index);
	struct usdt_series_key sk;
	struct usdt_inflight_key ik = {};
	struct usdt_series *s;
	__u64 now, id, *start;

	if (!p || p->role == USDT_ROLE_NONE)
		return 0;
	sk.target = p->target;
	sk.rule = p->rule;
	if (p->role == USDT_ROLE_COUNT) {
		s = lookup_or_init(&usdt_series, &sk, &zero_series);
		if (s)
			s->events += 1;
		return 0;
	}
	now = bpf_ktime_get_ns();
	id = bpf_get_current_pid_tgid();
	ik.rule = p->rule;
	ik.tgid = id >> 32;
	ik.key = marker_arg(ctx, &p->key, id);
	if (p->role == USDT_ROLE_START) {
		/* A nested start of the same key replaces the earlier one. */
		if (bpf_map_update_elem(&usdt_inflight, &ik, &now, BPF_ANY) != 0)
			count_lost(LOST_INFLIGHT_FULL);
		return 0;
	}
	start = bpf_map_lookup_elem(&usdt_inflight, &ik);
	if (!start) {
		count_lost(LOST_NO_START);
		return 0;
	}
	now -= *start;
	bpf_map_delete_elem(&usdt_inflight, &ik);
	s = lookup_or_init(&usdt_series, &sk, &zero_series);
	if (!s)
		return 0;
	s->events += 1;
	hist_add(&s->span, now);
	return 0;
}
