/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Log2 latency histogram shared by the BPF programs and the daemon. Slot i counts values
 * v with v <= 1 us * 2^i (and above the previous bound); the last slot is the +Inf overflow.
 * Bounds are exact in nanoseconds, so Prometheus' `le` semantics hold without rounding.
 * Plain C, usable from BPF and C++ alike, so the unit tests exercise the code the kernel runs.
 */
#ifndef CEPHSCOPE_HISTOGRAM_H
#define CEPHSCOPE_HISTOGRAM_H

#ifndef __VMLINUX_H__
#include <linux/types.h> /* user space; BPF programs get the types from vmlinux.h */
#endif

/* 25 finite buckets, 1 us .. 2^24 us (16.8 s), then +Inf. */
#define HIST_FINITE_SLOTS 25
#define HIST_SLOTS (HIST_FINITE_SLOTS + 1)
#define HIST_FIRST_BOUND_NS 1000ULL

struct hist {
	__u64 slots[HIST_SLOTS];
	__u64 sum_ns;
};

/* floor(log2(v)) for v > 0, branch-light so the verifier sees a bounded program. */
static inline __u32 hist_log2(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

/*
 * Smallest i with ns <= 1 us * 2^i, or the overflow slot. No division: a 64-bit divide is the
 * costliest instruction of a program that folds a dozen stages per op. As 2^9 < 1000 < 2^10,
 * a value in (2^c, 2^(c+1)] lands in slot c - 9 or c - 8.
 */
static inline __u32 hist_slot(__u64 ns)
{
	__u32 slot;

	if (ns <= HIST_FIRST_BOUND_NS)
		return 0;
	slot = hist_log2(ns - 1) - 9;
	if (slot >= HIST_FINITE_SLOTS)
		return HIST_FINITE_SLOTS;
	return ns > HIST_FIRST_BOUND_NS << slot ? slot + 1 : slot; /* at most the overflow slot */
}

/* Exemplars: a series' slowest op of the current exemplar interval, by histogram slot. */
struct exemplar_max {
	__u32 interval;
	__u32 slot; /* the histogram slot of the slowest op so far */
	__u64 whole_ns;
};

/*
 * 1 when an op of WHOLE ns is M's new maximum in INTERVAL, M then holding it: the first op of
 * a slower bucket than any before it in the interval, so a series sends about as many records
 * per interval as its ops span buckets, not ln(ops).
 */
static inline int exemplar_take(struct exemplar_max *m, __u32 interval, __u64 whole)
{
	__u32 slot = hist_slot(whole);

	if (m->interval == interval && m->slot >= slot)
		return 0;
	m->interval = interval;
	m->slot = slot;
	m->whole_ns = whole;
	return 1;
}

#endif
