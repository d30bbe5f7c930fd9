/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading what Ceph stamped on an op: the Message's receive stamps, OpRequest::dequeued_time
 * and the TrackedOp event list. Part of osd.bpf.c; the per-CPU scratch keeps the op's stamps
 * and stage durations out of the programs' stacks, so the global functions that work on them
 * take scalars only (what the 5.10 verifier accepts) and each is verified once.
 */
#ifndef CEPHSCOPE_OSD_EVENTS_BPF_H
#define CEPHSCOPE_OSD_EVENTS_BPF_H

#include <bpf/bpf_helpers.h>
#include "osd.h"

/* Stamps of one op, realtime ns; 0 = not known. */
struct op_times {
	__u64 recv, throttle, complete, queued, dequeued, started, subops_sent, last_subop,
	    local_commit;
	__u64 txq;	    /* transaction queued */
	__u64 kv_committed; /* its BlueStore kv commit */
	__u64 now;
};

/* Room for 32 events so that a masked index is in bounds for the verifier. */
#define EVENT_SLOTS 32

/* Room past the windows so that a masked offset plus a 24-byte member stays in bounds. */
#define OP_BUF_MASK 511
#define OP_BUF_SIZE (OP_BUF_MASK + 1 + 32)
#define MSG_BUF_MASK 255
#define MSG_BUF_SIZE (MSG_BUF_MASK + 1 + 32)

struct osd_scratch {
	__u8 events[EVENT_SLOTS * OSD_EVENT_SIZE]; /* a bulk copy of TrackedOp::events */
	__u8 op[OP_BUF_SIZE];			   /* the OpRequest window, when op_copied */
	__u8 msg[MSG_BUF_SIZE];			   /* the Message window, when msg_copied */
	__u32 op_copied;
	__u32 msg_copied;
	struct op_times t;
	__u64 d[OSD_STAGE_COUNT]; /* stage durations, ns */
	__u32 known;		  /* bit i: d[i] was measured (a stage can take 0 ns) */
	__u32 n_events;		  /* events read; none when Ceph's op tracker is off */
	__u32 subops_event;	  /* index of "waiting for subops from", or EVENT_NONE */
	__u32 replies;		  /* tier 2: replica replies taken (osd_inflight's ring) */
	__s32 reply_osd[OSD_REPLIES_KEPT];
	__u64 reply_ns[OSD_REPLIES_KEPT]; /* realtime */
};

#define EVENT_NONE 0xffffffffu

/*
 * Benchmarks only (tests/bench/osd-build-pair.sh, CUT_B): where the end-of-op programs stop,
 * so that two daemons on the same ops split a hit's cost. 0, as deployed, runs them whole; the
 * verifier drops the branches of a constant, so a deployed program carries none of it.
 */
const volatile __u32 bench_cut = 0;
#define CUT_AFTER_LOOKUPS 1 /* the layout and the scratch found: no user memory read */
#define CUT_AFTER_READS 2   /* + the OpRequest window and the event list copied, the clock */
#define CUT_BEFORE_FOLD 3   /* + the event scan and the stages: all but the stats */
#define CUT_BEFORE_HISTS 4  /* + the op's stats found: all but the histograms' updates */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct osd_scratch);
} osd_scratch SEC(".maps");

static __always_inline struct osd_scratch *scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&osd_scratch, &zero);
}

static __always_inline __u64 read_u64(const void *addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), addr);
	return v;
}

/* The first characters of the event names matched, as little-endian words. */
#define W_HEADER_R 0x725f726564616568ULL /* "header_r" */
#define W_THROTTLE 0x656c74746f726874ULL /* "throttle" */
#define W_ALL_READ 0x646165725f6c6c61ULL /* "all_read" */
#define W_QUEUED_F 0x665f646575657571ULL /* "queued_f" */
#define W_OP_COMMI 0x696d6d6f635f706fULL /* "op_commi" */
#define W_STARTED 0x0064657472617473ULL	 /* "started" and its terminating NUL */

/*
 * Event i of the bulk copy: {utime_t stamp @0; std::string str @8 (len @16, SSO @24)}.
 * Names up to 15 characters sit in the copy and are told apart by length and first eight
 * characters. The two longer names are told by where they come, so their heap text is never
 * read: Ceph marks "waiting for subops from <osds>" right after "started" (issue_repop), and
 * after it the only 17-character name is "sub_op_commit_rec", one per replica. A requeued op
 * is started again: its later "started" begins the scan of its execution anew.
 */
static __always_inline void scan_event(struct osd_scratch *s, __u32 i)
{
	struct op_times *t = &s->t;
	__u32 k = i;

	asm volatile("%0 &= 31" : "+r"(k)); /* EVENT_SLOTS - 1, kept for the verifier */
	const __u8 *ev = s->events + k * OSD_EVENT_SIZE;
	__u64 stamp = (__u64)(*(__u32 *)ev) * 1000000000ULL + *(__u32 *)(ev + 4);
	__u64 len = *(__u64 *)(ev + 16);
	__u64 word = *(__u64 *)(ev + 24); /* the inline text, when len <= 15 */

	if (len == 7) {
		if (word == W_STARTED) {
			t->started = stamp;
			t->subops_sent = t->last_subop = 0;
			s->subops_event = EVENT_NONE;
		}
	} else if (len == 13) {
		if (!t->queued && word == W_QUEUED_F)
			t->queued = stamp;
	} else if (len == 9) {
		if (word == W_OP_COMMI)
			t->local_commit = stamp;
		else if (word == W_THROTTLE)
			t->throttle = stamp;
	} else if (len == 11) {
		if (word == W_HEADER_R)
			t->recv = stamp;
	} else if (len == 8) {
		if (word == W_ALL_READ)
			t->complete = stamp;
	} else if (len == 17) {
		if (t->subops_sent && stamp > t->last_subop)
			t->last_subop = stamp;
	} else if (len >= 24 && t->started && !t->subops_sent) {
		t->subops_sent = stamp;
		s->subops_event = k;
	}
}

/* Scans the first n events of the scratch copy into its op_times. */
__noinline int osd_scan_events(__u32 n)
{
	struct osd_scratch *s = scratch();

	if (!s)
		return 0;
	for (__u32 i = 0; i < OSD_EVENTS_MAX; i++) {
		if (i >= n)
			break;
		scan_event(s, i);
	}
	return 0;
}

/* SIZE bytes at a masked offset of a window copy. */
static __always_inline int copied(void *dst, const __u8 *buf, __u32 at, __u32 size)
{
	if (size == 8)
		__builtin_memcpy(dst, buf + at, 8);
	else if (size == 16)
		__builtin_memcpy(dst, buf + at, 16);
	else if (size == 24)
		__builtin_memcpy(dst, buf + at, 24);
	else
		return -1;
	return 0;
}

/* SIZE bytes of the OpRequest member at OFF: from the window copy, else from the process. */
static __always_inline int op_member(struct osd_scratch *s, const struct osd_layout *l,
				     const void *op, __u32 off, void *dst, __u32 size)
{
	if (s->op_copied)
		return copied(dst, s->op, (off - l->op_window) & OP_BUF_MASK, size);
	return bpf_probe_read_user(dst, size, op + off) ? -1 : 0;
}

/* The same for the Message: its stamps and data length. */
static __always_inline int msg_member(struct osd_scratch *s, const struct osd_layout *l,
				      const void *msg, __u32 off, void *dst, __u32 size)
{
	if (s->msg_copied)
		return copied(dst, s->msg, (off - l->msg_window) & MSG_BUF_MASK, size);
	return bpf_probe_read_user(dst, size, msg + off) ? -1 : 0;
}

/* A utime_t {u32 sec; u32 nsec} of the Message, in ns; 0 when unreadable. */
static __always_inline __u64 msg_utime(struct osd_scratch *s, const struct osd_layout *l,
				       const void *msg, __u32 off)
{
	__u32 t[2];

	if (msg_member(s, l, msg, off, t, 8))
		return 0;
	return (__u64)t[0] * 1000000000ULL + t[1];
}

static __always_inline __u64 op_u64(struct osd_scratch *s, const struct osd_layout *l,
				    const void *op, __u32 off)
{
	__u64 v = 0;

	op_member(s, l, op, off, &v, 8);
	return v;
}

/* Copies TrackedOp::events in one read (short names sit in the strings' inline buffers). */
static __always_inline void read_events(struct osd_scratch *s, const struct osd_layout *l,
					const void *op)
{
	__u64 vec[2];

	if (!(l->have & OSD_HAVE_EVENTS) || op_member(s, l, op, l->op_events, vec, 16) ||
	    vec[1] <= vec[0])
		return;
	__u64 n = (vec[1] - vec[0]) / OSD_EVENT_SIZE;

	if (n > OSD_EVENTS_MAX)
		n = OSD_EVENTS_MAX;
	__u32 size = n * OSD_EVENT_SIZE;

	if (size > OSD_EVENTS_MAX * OSD_EVENT_SIZE ||
	    bpf_probe_read_user(s->events, size, (const void *)vec[0]))
		return;
	s->n_events = n;
	if (bench_cut != CUT_AFTER_READS)
		osd_scan_events(n);
}

/* Copies the OpRequest window in one read, when the build's layout allows it. */
static __always_inline void copy_op(struct osd_scratch *s, const struct osd_layout *l,
				    const void *op)
{
	__u32 len = l->op_window_len;

	s->op_copied = 0;
	if (!(l->have & OSD_HAVE_OP_WINDOW) || len == 0 || len > OSD_OP_WINDOW_MAX)
		return;
	if (!bpf_probe_read_user(s->op, len, op + l->op_window))
		s->op_copied = 1;
}

/*
 * Copies the Message window (stamps, data length) in one read, when the layout allows it.
 * read_stamps has cleared msg_copied: without a copy, members are read one by one.
 */
static __always_inline void copy_msg(struct osd_scratch *s, const struct osd_layout *l,
				     const void *msg)
{
	__u32 len = l->msg_window_len;

	if (!(l->have & OSD_HAVE_MSG_WINDOW) || len == 0 || len > OSD_MSG_WINDOW_MAX)
		return;
	if (!bpf_probe_read_user(s->msg, len, msg + l->msg_window))
		s->msg_copied = 1;
}

/*
 * Starts an op's scratch: its stamps and events, and now. OpTracker::create_request copies
 * the Message's receive stamps into the first events (header_read, throttled, all_read), so
 * the Message is read only when the op tracker is off or the caller wants the Message too.
 * Returns the Message, or NULL when it was not read.
 */
static __always_inline const void *read_stamps(struct osd_scratch *s, const struct osd_layout *l,
					       const void *op, __u64 now, bool want_msg)
{
	struct op_times *t = &s->t;

	__builtin_memset(t, 0, sizeof(*t));
	__builtin_memset(s->d, 0, sizeof(s->d));
	s->known = 0;
	s->n_events = 0;
	s->subops_event = EVENT_NONE;
	s->replies = 0;
	s->msg_copied = 0;
	t->now = now;
	copy_op(s, l, op);
	if (l->have & OSD_HAVE_DEQUEUED) {
		__u32 d[2];

		if (!op_member(s, l, op, l->op_dequeued_time, d, 8))
			t->dequeued = (__u64)d[0] * 1000000000ULL + d[1];
	}
	read_events(s, l, op);

	bool stamped = t->recv && t->throttle && t->complete;

	if (stamped && !want_msg)
		return 0;

	const void *msg = (const void *)op_u64(s, l, op, l->op_request);

	if (!msg || stamped)
		return msg;
	copy_msg(s, l, msg);
	if (l->have & OSD_HAVE_STAMPS) {
		t->recv = msg_utime(s, l, msg, l->msg_recv_stamp);
		t->throttle = msg_utime(s, l, msg, l->msg_throttle_stamp);
		t->complete = msg_utime(s, l, msg, l->msg_complete_stamp);
	}
	return msg;
}

/* An hour: a longer interval means a stamp is garbage (a clock step, a reused object). */
#define OSD_SPAN_MAX 3600000000000ULL

/* Sets stage i to a -> b when both ends are known and in order. */
static __always_inline void set_stage(struct osd_scratch *s, __u32 i, __u64 a, __u64 b)
{
	if (!a || !b || b < a || b - a > OSD_SPAN_MAX || i >= OSD_STAGE_COUNT)
		return;
	s->d[i] = b - a;
	s->known |= 1u << i;
}

#endif
