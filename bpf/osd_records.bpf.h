/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Op records of osd.bpf.c: one per client op or replica sub-op over the slow threshold, or
 * its series' new slowest of the exemplar interval, through a ring buffer, the only per-op
 * traffic to user space (docs/collectors/osd.md, "Slow-op records" and "Exemplars").
 */
#ifndef CEPHSCOPE_OSD_RECORDS_BPF_H
#define CEPHSCOPE_OSD_RECORDS_BPF_H

#include <bpf/bpf_helpers.h>
#include "osd.h"
#include "osd_events.bpf.h"
#include "maps.bpf.h"

/* Ops slower than this are counted in osd_stats.slow and recorded; 0 turns both off. */
volatile __u64 slow_ns;
/* The exemplar interval, moved by the daemon at each scrape; 0: no exemplars. */
volatile __u32 exemplar_interval;

/* Slow-op records, the rare path (docs/collectors/osd.md, "Slow-op records"). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, OSD_RECORDS_BYTES);
} osd_records SEC(".maps");

/*
 * The record of an op that is slow or its series' new maximum (MAXIMUM): its request id, pool
 * and PG, object, each stage's time and the replicas it waited for (the text of its "waiting
 * for subops from" event); a replica's sub-op (KIND) has no PG here (PG is NULL), no object
 * and no replicas.
 */
static __always_inline void record_op(struct osd_scratch *s, const struct osd_layout *l,
				      const void *pg, const void *op, __u32 tgid, __u32 target,
				      __u8 cls, __u64 whole, __u8 kind, int maximum)
{
	struct osd_slow_record *r;
	__u64 id[3], str[2], inc;
	__u32 seed, k;
	__u8 slow = slow_ns && whole >= slow_ns;

	if (!slow && !maximum)
		return;
	r = bpf_ringbuf_reserve(&osd_records, sizeof(*r), 0);
	if (!r) {
		count_lost(LOST_RECORD);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->time_ns = s->t.now;
	r->whole_ns = whole;
	__builtin_memcpy(r->stage_ns, s->d, sizeof(r->stage_ns));
	r->known = s->known;
	r->tgid = tgid;
	r->target = target;
	r->op = cls;
	r->kind = kind;
	r->slow = slow;
	r->exemplar = maximum != 0;
	r->interval = exemplar_interval;
	if ((l->have & OSD_HAVE_REQID) && !op_member(s, l, op, l->op_reqid, id, 24)) {
		r->name_type = (__u8)id[0];
		r->client = (__s64)id[1];
		r->tid = id[2];
		r->have_reqid = 1;
		if ((l->have & OSD_HAVE_REQID_INC) &&
		    !op_member(s, l, op, l->op_reqid + 24, &inc, 8)) {
			r->inc = (__s32)inc;
			r->have_inc = 1;
		}
	}
	if ((l->have & OSD_HAVE_PG) && pg && !bpf_probe_read_user(&seed, 4, pg + l->pg_seed)) {
		r->pool = read_u64(pg + l->pg_pool);
		r->pg_seed = seed;
		r->have_pg = 1;
	}
	k = s->subops_event;
	if (k < s->n_events) {
		asm volatile("%0 &= 31" : "+r"(k)); /* EVENT_SLOTS - 1, kept for the verifier */
		bpf_probe_read_user_str(
		    r->replicas, sizeof(r->replicas),
		    (const void *)*(__u64 *)(s->events + k * OSD_EVENT_SIZE + 8));
	}
	r->replies = s->replies;
#pragma unroll
	for (__u32 i = 0; i < OSD_REPLIES_KEPT; i++) {
		r->reply_osd[i] = s->reply_osd[i];
		if (s->reply_ns[i] > s->t.recv && s->t.recv)
			r->reply_after_ns[i] = s->reply_ns[i] - s->t.recv;
	}
	if ((l->have & OSD_HAVE_OBJECT) && kind == OSD_RECORD_OP) { /* a MOSDOp's, not a sub-op's */
		const void *msg = (const void *)op_u64(s, l, op, l->op_request);

		if (msg && !bpf_probe_read_user(str, sizeof(str), msg + l->msg_object)) {
			r->object_len = (__u32)str[1];
			bpf_probe_read_user_str(r->object, sizeof(r->object), (const void *)str[0]);
		}
	}
	bpf_ringbuf_submit(r, 0);
}

#endif
