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
 * Filters on the tracked-process slots first: other processes cost one array read. A thread's
 * in-flight slot is created once and then rewritten in place, so the hot path makes no map
 * update or delete (each costs a lock in an LRU map); the LRU evicts slots of dead threads.
 */
static __always_inline int op_begin(void *inflight, __u32 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 target = target_of(id >> 32);

	if (target == CEPHSCOPE_UNTRACKED)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct op_start *slot = bpf_map_lookup_elem(inflight, &id);

	if (slot) {
		slot->target = target;
		slot->op = op;
		slot->ts_ns = now;
		return 0;
	}
	struct op_start start = {.ts_ns = now, .target = target, .op = op};

	if (bpf_map_update_elem(inflight, &id, &start, BPF_NOEXIST))
		count_lost(LOST_INFLIGHT_FULL);
	return 0;
}

/* bytes_ops: bit N set when op N returns a byte count. */
static __always_inline int op_finish(void *inflight, void *stats_map, long ret, __u32 bytes_ops)
{
	struct target_op_key key;
	struct op_stats *stats;
	struct op_start *start;
	__u64 id = bpf_get_current_pid_tgid();

	if (target_of(id >> 32) == CEPHSCOPE_UNTRACKED)
		return 0; /* the same filter as op_begin: no in-flight lookup for other processes */
	start = bpf_map_lookup_elem(inflight, &id);
	if (!start || !start->ts_ns)
		return 0; /* started before attach */
	__u64 delta = bpf_ktime_get_ns() - start->ts_ns;
	key.target = start->target;
	key.op = start->op;
	start->ts_ns = 0; /* consumed: the slot stays for the thread's next call */

	stats = lookup_or_init(stats_map, &key, &zero_op_stats);
	if (!stats)
		return 0;
	hist_add(&stats->latency, delta);
	if (ret < 0)
		stats->errors += 1;
	else if ((bytes_ops >> (key.op & 31)) & 1)
		stats->bytes += ret;
	return 0;
}

#endif
