/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Map helpers used by every collector. */
#ifndef CEPHSCOPE_MAPS_BPF_H
#define CEPHSCOPE_MAPS_BPF_H

#include <bpf/bpf_helpers.h>
#include "cephscope.h"

#ifndef EEXIST
#define EEXIST 17
#endif

/* Each collector object has its own lost-event counters, read at scrape time. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_REASONS);
	__type(key, __u32);
	__type(value, __u64);
} lost_events SEC(".maps");

static __always_inline void count_lost(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&lost_events, &reason);

	if (n)
		*n += 1; /* per-CPU slot: no atomic needed */
}

/* Returns the value at key, inserting init first when absent; NULL when the map is full. */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *val = bpf_map_lookup_elem(map, key);
	long err;

	if (val)
		return val;
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_lost(LOST_STATS_FULL);
		return 0;
	}
	return bpf_map_lookup_elem(map, key);
}

/* Counts NS in its bucket of SLOTS (HIST_SLOTS of them): hist_add without the sum. */
static __always_inline void slots_add(__u64 *slots, __u64 ns)
{
	__u32 slot = hist_slot(ns);

	/*
	 * clang can prove slot < HIST_SLOTS and would drop a check, but the verifiers of 5.10
	 * and 6.1 cannot follow hist_slot's arithmetic: the barrier keeps the check in the
	 * program, and a guarded update (not a clamped index) is what those verifiers accept.
	 */
	barrier_var(slot);
	if (slot < HIST_SLOTS)
		slots[slot] += 1;
}

static __always_inline void hist_add(struct hist *h, __u64 ns)
{
	slots_add(h->slots, ns);
	h->sum_ns += ns;
}

#ifdef CEPHSCOPE_BPF_DEBUG
#define debug_printk(fmt, ...) bpf_printk(fmt, ##__VA_ARGS__)
#else
#define debug_printk(fmt, ...) ((void)0)
#endif

#endif
