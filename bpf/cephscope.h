/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Types and limits shared by every BPF object and the daemon. Plain C, UAPI types only. */
#ifndef CEPHSCOPE_H
#define CEPHSCOPE_H

#include "histogram.h"

/* Capacity of the tracked-process map shared by all collectors. */
#define CEPHSCOPE_MAX_TRACKED 4096

/*
 * The tracked filter's fast path: an array of CEPHSCOPE_TRACKED_SLOTS packed words, slot
 * tgid & (slots - 1): the tgid in bits 0-31, its target id in bits 32-62, and
 * TRACKED_SLOT_SHARED when other tracked tgids map to the slot too (those are found in the
 * tracked_tgids hash). Most events of untracked processes end at one inlined array read.
 */
#define CEPHSCOPE_TRACKED_SLOTS 4096
#define TRACKED_SLOT_SHARED (1ULL << 63)
#define TRACKED_SLOT_TARGET(packed) ((__u32)((packed) >> 32) & 0x7fffffffu)

/* Target id 0 means "no tracked process": such events count only in per-device series. */
#define CEPHSCOPE_UNTRACKED 0

/* Why an event was not folded; indexes each collector's lost_events per-CPU array. */
enum cephscope_lost_reason {
	LOST_INFLIGHT_FULL = 0, /* in-flight record could not be stored */
	LOST_STATS_FULL = 1,	/* histogram map full: series cap reached in the kernel */
	LOST_NO_START = 2,	/* an end with no start: LRU eviction, or begun before attach */
	LOST_RECORD = 3,	/* a slow-op record found its ring buffer full */
	LOST_REASONS = 4,
};

/* Per target and operation (a syscall, a vfs function): the shape syscall and vfs share. */
struct target_op_key {
	__u32 target;
	__u32 op;
};

struct op_stats {
	struct hist latency;
	__u64 bytes;  /* sum of positive return values, where they count bytes */
	__u64 errors; /* calls that returned a negative errno */
};

/*
 * In-flight records live in array slots; a new record takes its slot. One it displaces that
 * is younger than this (the block layer's default request timeout) was live: counted
 * inflight_full. Older ones are leftovers (a call or IO whose end was never seen).
 */
#define INFLIGHT_STALE_NS (30ULL * 1000000000ULL)

/*
 * The slot of in-flight key (ID, OWNER) in a direct-mapped table of SLOTS (a power of two),
 * under a SEED the daemon draws at each load, so that no process can aim its keys at the
 * slots of another's.
 */
static inline __u32 inflight_slot(__u64 id, __u32 owner, __u64 seed, __u32 slots)
{
	__u64 h = ((id ^ ((__u64)owner << 40)) + seed) * 0x9E3779B97F4A7C15ULL;

	return (__u32)(h >> 32) & (slots - 1);
}

/*
 * Series groups of the syscall and vfs collectors (op_latency.bpf.h): a per-CPU array of
 * OP_SERIES_GROUPS groups, one op_stats per operation each, and the target that owns each
 * group. Target T may own group T mod OP_SERIES_GROUPS only; the daemon gives it out while
 * the group is free and zeroes it when T expires. A call of a target without its group is
 * folded into the per-CPU hash as before.
 */
#define OP_SERIES_GROUPS 64

static inline __u32 op_series_group(__u32 target)
{
	return target & (OP_SERIES_GROUPS - 1);
}

/* One call in flight per thread, in the thread's slot (op_latency.bpf.h). */
#define OP_INFLIGHT_SLOTS 16384

struct op_start {
	__u64 ts_ns; /* 0: no call in flight */
	__u32 tid;
	__u32 target;
	__u32 op;
	__u32 pad;
};

#endif
