/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Start/finish of a call made by a tracked process (a syscall, a vfs function), folded into
 * a per-CPU op_stats histogram. Shared by the syscall and vfs collectors.
 */
#ifndef CEPHSCOPE_OP_LATENCY_BPF_H
#define CEPHSCOPE_OP_LATENCY_BPF_H

#include "maps.bpf.h"
#include "targets.bpf.h"

static const struct op_stats zero_op_stats;

/*
 * A collector's series groups (cephscope.h): the owner of each group, and OPS op_stats per
 * group. An owned group is found by two array lookups where the hash costs a hashed key, a
 * bucket and an element, each a cache line that other CPUs' work has evicted in a busy OSD.
 */
#define OP_SERIES_MAPS(prefix, ops)                                                                \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                  \
		__uint(max_entries, OP_SERIES_GROUPS);                                             \
		__type(key, __u32);                                                                \
		__type(value, __u32); /* target id; 0: free */                                     \
	} prefix##_series_owner SEC(".maps");                                                      \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__uint(max_entries, OP_SERIES_GROUPS *(ops));                                      \
		__type(key, __u32);                                                                \
		__type(value, struct op_stats);                                                    \
	} prefix##_series SEC(".maps")

/* The maps a collector folds its calls into. */
struct op_maps {
	void *inflight;
	void *stats;	 /* per-CPU hash: targets without their group */
	void *owner;	 /* series group -> owning target */
	void *series;	 /* per-CPU array: group * ops + op */
	__u32 ops;	 /* operations per group */
	__u32 bytes_ops; /* bit N set when op N returns a byte count */
};

static __always_inline struct op_stats *op_stats_of(const struct op_maps *maps,
						    const struct target_op_key *key)
{
	__u32 group = op_series_group(key->target);
	__u32 *owner = bpf_map_lookup_elem(maps->owner, &group);

	if (owner && *owner == key->target) {
		__u32 index = group * maps->ops + key->op;

		return bpf_map_lookup_elem(maps->series, &index);
	}
	return lookup_or_init(maps->stats, key, &zero_op_stats);
}

/*
 * A call's start lasts from entry to exit, within one thread. In-flight maps (an array of
 * OP_INFLIGHT_SLOTS) hold one slot per thread id modulo their size, rewritten in place: one
 * inlined array load per event, no hash lookup (an LRU hash lookup also dirties the entry's
 * reference bit). Entry stores its record without reading the slot: the slot's line was last
 * written at the thread's previous exit, often on another CPU, and waiting for it cost a
 * tracked entry more than all its other work in a busy OSD (tests/bench/osd-overhead.sh,
 * part 4). A thread whose slot another thread took (ids OP_INFLIGHT_SLOTS apart, both in a
 * call) finds that one's id at its exit, counted no_start, as is a call begun before the
 * programs were attached or its process tracked.
 */
static __always_inline struct op_start *thread_slot(void *inflight, __u32 tid)
{
	__u32 slot = tid & (OP_INFLIGHT_SLOTS - 1);

	return bpf_map_lookup_elem(inflight, &slot);
}

/* Filters on the tracked-process slots first: other processes cost one array read. */
static __always_inline int op_begin(void *inflight, __u32 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 target = target_of(id >> 32);

	if (target == CEPHSCOPE_UNTRACKED)
		return 0;
	struct op_start *start = thread_slot(inflight, (__u32)id);

	if (start)
		*start = (struct op_start){
		    .ts_ns = bpf_ktime_get_ns(), .tid = (__u32)id, .target = target, .op = op};
	return 0;
}

static __always_inline int op_finish(const struct op_maps *maps, long ret)
{
	struct target_op_key key;
	struct op_stats *stats;
	struct op_start *start;
	__u64 id = bpf_get_current_pid_tgid();

	if (target_of(id >> 32) == CEPHSCOPE_UNTRACKED)
		return 0; /* the same filter as op_begin: no in-flight lookup for other processes */
	start = thread_slot(maps->inflight, (__u32)id);
	if (!start)
		return 0;
	if (!start->ts_ns || start->tid != (__u32)id) {
		count_lost(LOST_NO_START); /* begun before attach or tracking, or displaced */
		return 0;
	}
	__u64 delta = bpf_ktime_get_ns() - start->ts_ns;
	key.target = start->target;
	key.op = start->op;
	start->ts_ns = 0; /* consumed: the slot stays for the thread's next call */

	stats = op_stats_of(maps, &key);
	if (!stats)
		return 0;
	hist_add(&stats->latency, delta);
	if (ret < 0)
		stats->errors += 1;
	else if ((maps->bytes_ops >> (key.op & 31)) & 1)
		stats->bytes += ret;
	return 0;
}

#endif
