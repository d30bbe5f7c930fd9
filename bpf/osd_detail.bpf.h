/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Tier 2 of osd.bpf.c (collectors.osd.detail, docs/collectors/osd.md): P1 joins an op to its
 * BlueStore transaction, P4-P6 read the transaction's states, P9 notes each replica's commit
 * reply on the primary. All of them write the op's in-flight record, which osd_op_done and
 * osd_subop_done take when the op ends. Included by osd.bpf.c after its shared helpers.
 */
#ifndef CEPHSCOPE_OSD_DETAIL_BPF_H
#define CEPHSCOPE_OSD_DETAIL_BPF_H

/*
 * The op whose transaction a thread is queuing: from queue_transactions to its txc. A thread
 * keeps its entry and rewrites it in place, so an op costs no map update after the thread's
 * first: queued = CLAIM_NONE stands for "nothing to claim".
 */
struct txn_claim {
	struct osd_op_key op;
	__u64 queued; /* mono ns: a txc that started before this is not the op's */
};

#define CLAIM_NONE (~0ULL)

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, OSD_THREADS_MAX);
	__type(key, __u64); /* pid_tgid */
	__type(value, struct txn_claim);
} osd_txn_claims SEC(".maps");

struct txc_key {
	__u32 tgid;
	__u32 pad;
	__u64 txc; /* BlueStore::TransContext * */
};

/* A BlueStore transaction between its aio submit / io done and its kv commit. */
struct txc_state {
	struct osd_op_key op;
	__u64 prepared; /* last_stamp at aio submit: prepare done; 0 = no data aio */
	__u64 io_done;	/* queued for the kv thread (or, as fallback, io completion) */
	__u64 bs[OSD_BS_COUNT];
	__u32 bs_known;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, OSD_TXC_MAX);
	__type(key, struct txc_key);
	__type(value, struct txc_state);
} osd_txcs SEC(".maps");

/* Tier 2: per OSD, its replicated client writes by the replica that answered last. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, OSD_LAST_REPLICA_MAX);
	__type(key, struct osd_last_replica_key);
	__type(value, __u64);
} osd_last_replica SEC(".maps");

static const __u64 zero_count;

/* P1: BlueStore::queue_transactions(ch, tls, TrackedOpRef op, handle): the op's transaction. */
SEC("uprobe")
int osd_txn_queued(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct osd_layout *l = osd_layout_of(tgid);
	struct txn_claim claim = {}, *mine;
	struct osd_inflight rec = {};
	const void *op;

	if (!l)
		return 0;
	mine = (l->have & OSD_HAVE_TXC) ? bpf_map_lookup_elem(&osd_txn_claims, &pid_tgid) : 0;
	op = (const void *)read_u64((const void *)PT_REGS_PARM4(ctx)); /* by-value intrusive_ptr */
	if (!op || read_key(l, op, tgid, &claim.op) || !claim.op.tid) {
		/*
		 * PG metadata transactions carry no op; EC sub-writes and recovery pushes carry one
		 * without a client reqid: nothing to join
		 */
		if (mine)
			mine->queued = CLAIM_NONE;
		return 0;
	}
	rec.queued = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&osd_inflight, &claim.op, &rec, BPF_ANY))
		count_lost(LOST_INFLIGHT_FULL);
	if (mine) {
		mine->op = claim.op;
		mine->queued = rec.queued;
	} else if (l->have & OSD_HAVE_TXC) {
		claim.queued = rec.queued;
		bpf_map_update_elem(&osd_txn_claims, &pid_tgid, &claim, BPF_ANY);
	}
	return 0;
}

/* The txc's start and last state change, mono ns. */
static __always_inline int txc_stamps(const struct osd_layout *l, const void *txc, __u64 *start,
				      __u64 *last)
{
	__u64 both[2];

	if (!(l->have & OSD_HAVE_TXC) || !txc)
		return -1;
	if ((l->have & OSD_HAVE_TXC_ADJACENT) &&
	    !bpf_probe_read_user(both, sizeof(both), txc + l->txc_start)) {
		*start = both[0]; /* last_stamp follows start in every release read */
		*last = both[1];
	} else {
		*start = read_u64(txc + l->txc_start);
		*last = read_u64(txc + l->txc_last_stamp);
	}
	return *start && *last >= *start ? 0 : -1;
}

/* The thread's claim on this txc: it started after the thread queued its op's transaction. */
static __always_inline struct txn_claim *claim_for(__u64 pid_tgid, __u64 start)
{
	struct txn_claim *c = bpf_map_lookup_elem(&osd_txn_claims, &pid_tgid);

	return c && c->queued != CLAIM_NONE && start >= c->queued ? c : 0;
}

static __always_inline void set_bs(struct txc_state *st, __u32 i, __u64 ns)
{
	if (i < OSD_BS_COUNT && ns <= OSD_SPAN_MAX) {
		st->bs[i] = ns;
		st->bs_known |= 1u << i;
	}
}

/* P4: BlueStore::_txc_aio_submit(TransContext *txc): prepared, data aio submitted. */
SEC("uprobe")
int osd_txc_aio_submit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct osd_layout *l = osd_layout_of(tgid);
	const void *txc = (const void *)PT_REGS_PARM2(ctx);
	struct txc_key key = {.tgid = tgid, .txc = (__u64)txc};
	struct txc_state st = {};
	struct txn_claim *c;
	__u64 start, last;

	if (!l || txc_stamps(l, txc, &start, &last))
		return 0;
	c = claim_for(pid_tgid, start);
	if (!c)
		return 0;
	st.op = c->op;
	st.prepared = last;
	c->queued = CLAIM_NONE; /* taken */
	if (bpf_map_update_elem(&osd_txcs, &key, &st, BPF_ANY))
		count_lost(LOST_INFLIGHT_FULL);
	return 0;
}

/*
 * Data IO done. After the call that logs io_done in _txc_state_proc (P5, LOGGED), LAT is
 * io_done as Ceph measured it (log_state_latency's return value) and last_stamp its end; at
 * the fallback, the entry of _txc_finish_io, last_stamp is aio_wait's end and io_done is left
 * to kv_queued.
 */
static __always_inline int txc_io_done(struct osd_layout *l, const void *txc, bool logged,
				       __u64 lat)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct txc_key key = {.tgid = pid_tgid >> 32, .txc = (__u64)txc};
	struct txc_state fresh = {}, *st;
	struct txn_claim *c;
	__u64 start, last, aio_end;
	bool found = true;

	if (!l || txc_stamps(l, txc, &start, &last) || (logged && lat > last))
		return 0;
	aio_end = logged ? last - lat : last;
	st = bpf_map_lookup_elem(&osd_txcs, &key);
	if (!st || st->prepared < start || aio_end < st->prepared) {
		/* no data aio: prepare fell through to aio_wait on the thread that queued the op */
		c = claim_for(pid_tgid, start);
		if (!c)
			return 0;
		fresh.op = c->op;
		c->queued = CLAIM_NONE; /* taken */
		fresh.prepared = aio_end;
		st = &fresh;
		found = false;
	}
	set_bs(st, 0, st->prepared - start);
	set_bs(st, 1, aio_end - st->prepared);
	if (logged)
		set_bs(st, 2, lat);
	st->io_done = last;
	if (!found && bpf_map_update_elem(&osd_txcs, &key, &fresh, BPF_ANY))
		count_lost(LOST_INFLIGHT_FULL);
	return 0;
}

/*
 * The callee-saved register REG (enum cephscope_osd_saved_reg) of a uprobe's context. All six
 * are loaded first: the verifier takes context loads at constant offsets only, and a switch of
 * loads is compiled into one load at a computed offset.
 */
static __always_inline __u64 saved_reg(const struct pt_regs *ctx, __u32 reg)
{
	__u64 bx = ctx->bx, bp = ctx->bp, r12 = ctx->r12, r13 = ctx->r13, r14 = ctx->r14,
	      r15 = ctx->r15;

	asm volatile("" : "+r"(bx), "+r"(bp), "+r"(r12), "+r"(r13), "+r"(r14), "+r"(r15));
	switch (reg) {
	case OSD_REG_RBX:
		return bx;
	case OSD_REG_RBP:
		return bp;
	case OSD_REG_R12:
		return r12;
	case OSD_REG_R13:
		return r13;
	case OSD_REG_R14:
		return r14;
	case OSD_REG_R15:
		return r15;
	default:
		return 0;
	}
}

/*
 * P5: the return address of the call of log_state_latency(io_done) in
 * BlueStore::_txc_state_proc: the transaction in the register the call's set-up copied it
 * from, io_done in rax.
 */
SEC("uprobe")
int osd_txc_io_done(struct pt_regs *ctx)
{
	struct osd_layout *l = osd_layout_of(bpf_get_current_pid_tgid() >> 32);

	if (!l)
		return 0;
	return txc_io_done(l, (const void *)saved_reg(ctx, l->io_done_txc_reg), true,
			   PT_REGS_RC(ctx));
}

/* P5 fallback: BlueStore::_txc_finish_io(TransContext *txc), when the call site is unknown. */
SEC("uprobe")
int osd_txc_finish_io(struct pt_regs *ctx)
{
	return txc_io_done(osd_layout_of(bpf_get_current_pid_tgid() >> 32),
			   (const void *)PT_REGS_PARM2(ctx), false, 0);
}

/* P6: BlueStore::_txc_committed_kv(TransContext *txc), on the kv_final thread: kv committed. */
SEC("uprobe")
int osd_txc_kv_done(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct osd_layout *l = osd_layout_of(tgid);
	const void *txc = (const void *)PT_REGS_PARM2(ctx);
	struct txc_key key = {.tgid = tgid, .txc = (__u64)txc};
	struct osd_inflight *rec;
	struct txc_state *st;
	__u64 start, last, now = bpf_ktime_get_ns();

	if (!l || txc_stamps(l, txc, &start, &last))
		return 0;
	st = bpf_map_lookup_elem(&osd_txcs, &key);
	if (!st)
		return 0;
	if (st->io_done && last >= st->io_done)
		set_bs(st, 3, last - st->io_done);
	if (now >= last)
		set_bs(st, 4, now - last);
	rec = bpf_map_lookup_elem(&osd_inflight, &st->op);
	if (rec) {
		__builtin_memcpy(rec->bs, st->bs, sizeof(rec->bs));
		rec->bs_known = st->bs_known;
		rec->kv_committed = now;
	} else {
		count_lost(LOST_NO_START);
	}
	bpf_map_delete_elem(&osd_txcs, &key);
	return 0;
}

/* Tier 2: counts the replica whose commit reply came last to the OSD's replicated writes. */
static __always_inline void count_last_replica(const struct osd_scratch *s, __u32 target)
{
	struct osd_last_replica_key key = {.target = target};
	__u64 *n;

	if (!s->replies)
		return;
	key.replica = s->reply_osd[(s->replies - 1) & (OSD_REPLIES_KEPT - 1)];
	n = lookup_or_init(&osd_last_replica, &key, &zero_count);
	if (n)
		*n += 1;
}

/* Message::header.src.type of an OSD (CEPH_ENTITY_TYPE_OSD). */
#define ENTITY_TYPE_OSD 4

/*
 * P9 (tier 2): ReplicatedBackend::do_repop_reply(OpRequestRef op) on the primary: a replica's
 * commit reply (MOSDRepOpReply; these releases send no other kind). Which replica and when go
 * to the op's in-flight record, found by the client's reqid that the reply carries; the op
 * ends later in this thread or another (log_op_stats), after every reply. An op without a
 * record (its transaction queued before tier 2 was attached) is left alone. The replica is the
 * message's sender (header.src, which the messenger sets from the connection's peer): the
 * reply's own `from` is decoded only inside this function (finish_decode), after the probe.
 */
SEC("uprobe")
int osd_repop_reply(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 target;
	struct osd_layout *l = tracked_osd(tgid, &target);
	struct osd_op_key key;
	struct osd_inflight *rec;
	__u64 id[3], num;
	__u8 src[9];

	if (!l ||
	    (l->have & (OSD_HAVE_REPLY | OSD_HAVE_REQID)) != (OSD_HAVE_REPLY | OSD_HAVE_REQID))
		return 0;
	const void *op = (const void *)read_u64((const void *)PT_REGS_PARM2(ctx));
	const void *msg = op ? (const void *)read_u64(op + l->op_request) : 0;

	if (!msg || bpf_probe_read_user(id, sizeof(id), msg + l->reply_reqid) ||
	    bpf_probe_read_user(src, sizeof(src), msg + l->msg_src) || src[0] != ENTITY_TYPE_OSD)
		return 0;
	__builtin_memcpy(&num, src + 1, sizeof(num));
	fill_key(&key, tgid, id);
	rec = bpf_map_lookup_elem(&osd_inflight, &key);
	if (!rec)
		return 0;
	__u32 i = rec->replies & (OSD_REPLIES_KEPT - 1);

	rec->reply_ns[i] = bpf_ktime_get_ns();
	rec->reply_osd[i] = (__s32)num;
	rec->replies += 1;
	return 0;
}

#endif
