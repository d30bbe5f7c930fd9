// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osd collector: per-op stage latency in ceph-osd, folded in the kernel.
 *
 * Ceph stamps most boundaries of an op itself (the Message's receive stamps, the OpRequest's
 * dequeue time and TrackedOp events). One probe where the op completes reads them all:
 * PrimaryLogPG::log_op_stats (client ops, primary) and ReplicatedBackend::repop_commit
 * (replicated writes, replica). The one op boundary Ceph does not record, "transaction
 * queued", comes from BlueStore::queue_transactions, keyed by the client's reqid in an LRU
 * map. BlueStore keeps only the latest state stamp of a transaction, so its stages take
 * three more probes per transaction (aio submitted, io done, kv committed); they are joined
 * to the op through the thread that queued it and folded with the op's other stages.
 * Member offsets come per process from osd_layout_slots / osd_layouts (the build's probe
 * profile).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "osd.h"
#include "osd_events.bpf.h"
#include "maps.bpf.h"
#include "targets.bpf.h" /* every object declares it (the daemon shares one) */
#include "osd_records.bpf.h"
#include "layouts.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, kept current by the daemon. */
volatile __s64 rt_off_ns;

/* Layouts by tgid: the first process of each slot in the array, every one in the hash. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OSD_LAYOUTS_MAX);
	__type(key, __u32); /* tgid % OSD_LAYOUTS_MAX */
	__type(value, struct osd_layout);
} osd_layout_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OSD_LAYOUTS_MAX);
	__type(key, __u32); /* tgid */
	__type(value, struct osd_layout);
} osd_layouts SEC(".maps");

static __always_inline struct osd_layout *osd_layout_of(__u32 tgid)
{
	return layout_of(&osd_layout_slots, &osd_layouts, tgid, OSD_LAYOUTS_MAX);
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, OSD_INFLIGHT_MAX);
	__type(key, struct osd_op_key);
	__type(value, struct osd_inflight);
} osd_inflight SEC(".maps");

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

/*
 * The series of OSDs without a slot. A value holds every stage's histogram (3 KiB per CPU):
 * the daemon preallocates this hash, like every per-CPU hash, within a budget per CPU
 * (size_percpu_hashes, daemon/libbpf/maps.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, OSD_STATS_MAX);
	__type(key, struct osd_stats_key);
	__type(value, struct osd_stats);
} osd_stats SEC(".maps");

/* The series of processes with a stats slot (osd.h): an index, no hash lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OSD_STATS_SLOTS *OSD_SLOT_SERIES);
	__type(key, __u32);
	__type(value, struct osd_stats);
} osd_stats_slots SEC(".maps");

static const struct osd_stats zero_stats;

/* Tier 2: per OSD, its replicated client writes by the replica that answered last. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, OSD_LAST_REPLICA_MAX);
	__type(key, struct osd_last_replica_key);
	__type(value, __u64);
} osd_last_replica SEC(".maps");

static const __u64 zero_count;

/* The op's series: in its process's slot (STATS_SLOT = 1 + the slot), else in the hash. */
static __always_inline struct osd_stats *series_of(__u32 target, __u32 stats_slot, __u32 kind,
						   __u32 op)
{
	struct osd_stats_key key = {.target = target, .kind = kind, .op = op};

	if (stats_slot - 1 < OSD_STATS_SLOTS && op < OSD_OP_COUNT) {
		__u32 i = (stats_slot - 1) * OSD_SLOT_SERIES + osd_slot_series(kind, op);

		return bpf_map_lookup_elem(&osd_stats_slots, &i);
	}
	return lookup_or_init(&osd_stats, &key, &zero_stats);
}

static __always_inline void fill_key(struct osd_op_key *key, __u32 tgid, const __u64 *id)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->tgid = tgid;
	key->name_type = (__u8)id[0];
	key->name_num = (__s64)id[1];
	key->tid = id[2];
}

/* The op's in-flight key: tgid and OpRequest::reqid (client entity, tid). */
static __always_inline int read_key(const struct osd_layout *l, const void *op, __u32 tgid,
				    struct osd_op_key *key)
{
	__u64 id[3];

	if (!(l->have & OSD_HAVE_REQID) || bpf_probe_read_user(id, sizeof(id), op + l->op_reqid))
		return -1;
	fill_key(key, tgid, id);
	return 0;
}

/* The same, at the op's end, where the scratch may hold the OpRequest window. */
static __always_inline int scratch_key(struct osd_scratch *s, const struct osd_layout *l,
				       const void *op, __u32 tgid, struct osd_op_key *key)
{
	__u64 id[3];

	if (!(l->have & OSD_HAVE_REQID) || op_member(s, l, op, l->op_reqid, id, 24))
		return -1;
	fill_key(key, tgid, id);
	return 0;
}

/* The longest measured stage in the scratch, or OSD_STAGE_COUNT; only slow ops need it. */
__noinline int osd_longest_stage(void)
{
	struct osd_scratch *s = scratch();
	__u32 longest = OSD_STAGE_COUNT;
	__u64 max = 0;

	if (!s)
		return OSD_STAGE_COUNT;
#pragma unroll
	for (__u32 i = 0; i < OSD_STAGE_COUNT; i++) {
		if ((s->known & (1u << i)) && s->d[i] >= max) {
			max = s->d[i];
			longest = i;
		}
	}
	return longest;
}

/* osd_fold's second argument: the process's stats slot, the op's kind and op. */
static __always_inline __u32 series_arg(const struct osd_layout *l, __u32 kind, __u32 op)
{
	return (l->stats_slot & 0xffff) << 16 | (kind & 0xff) << 8 | (op & 0xff);
}

/*
 * Folds the scratch's measured stages and the whole op (series = series_arg()) into the op's
 * series with one map lookup; a slow op is counted under its longest stage. A global
 * function: the verifier checks it once, not once per caller's path.
 */
__noinline int osd_fold(__u32 target, __u32 series, __u64 whole, __u64 in, __u64 out)
{
	struct osd_scratch *s = scratch();
	struct osd_stats *st;

	if (!s)
		return 0;
	st = series_of(target, series >> 16, (series >> 8) & 0xff, series & 0xff);
	if (!st || bench_cut == CUT_BEFORE_HISTS)
		return 0;
#pragma unroll
	for (__u32 i = 0; i < OSD_STAGE_COUNT; i++) {
		if (s->known & (1u << i))
			hist_add(&st->latency[i], s->d[i]);
	}
	hist_add(&st->latency[OSD_STAGE_WHOLE], whole);
	st->bytes_in += in;
	st->bytes_out += out;
	if (!slow_ns || whole < slow_ns)
		return 0;
	st->slow[OSD_STAGE_WHOLE] += 1;
	__u32 longest = osd_longest_stage();

	barrier_var(longest);
	if (longest < OSD_STAGE_COUNT)
		st->slow[longest] += 1;
	return 0;
}

/* The op's transaction record, consumed: queue time and BlueStore stages into the scratch. */
static __always_inline int take_inflight(struct osd_scratch *s, const struct osd_layout *l,
					 const void *op, __u32 tgid)
{
	struct osd_op_key key;
	struct osd_inflight *rec;

	if (!l->detail || scratch_key(s, l, op, tgid, &key))
		return -1;
	rec = bpf_map_lookup_elem(&osd_inflight, &key);
	if (!rec)
		return -1;
	s->t.txq = rec->queued + rt_off_ns;
	s->t.kv_committed = rec->kv_committed ? rec->kv_committed + rt_off_ns : 0;
#pragma unroll
	for (__u32 i = 0; i < OSD_BS_COUNT; i++) {
		if (rec->bs_known & (1u << i)) {
			s->d[OSD_BS_FIRST + i] = rec->bs[i];
			s->known |= 1u << (OSD_BS_FIRST + i);
		}
	}
	s->replies = rec->replies;
#pragma unroll
	for (__u32 i = 0; i < OSD_REPLIES_KEPT; i++) {
		s->reply_osd[i] = rec->reply_osd[i];
		s->reply_ns[i] = rec->reply_ns[i] ? rec->reply_ns[i] + rt_off_ns : 0;
	}
	bpf_map_delete_elem(&osd_inflight, &key);
	return 0;
}

/*
 * The calling OSD's layout, with its target id in *target; NULL for any other process. One
 * lookup: the uprobes are attached per process, and the layout carries the target id.
 */
static __always_inline struct osd_layout *tracked_osd(__u32 tgid, __u32 *target)
{
	struct osd_layout *l = osd_layout_of(tgid);

	if (!l || l->target == CEPHSCOPE_UNTRACKED)
		return 0;
	*target = l->target;
	return l;
}

/* The stages an op and a replicated write share: from the Message stamps to dequeue. */
static __always_inline void front_stages(struct osd_scratch *s)
{
	const struct op_times *t = &s->t;

	set_stage(s, OSD_STAGE_THROTTLE, t->recv, t->throttle);
	set_stage(s, OSD_STAGE_RECEIVE, t->throttle, t->complete);
	set_stage(s, OSD_STAGE_DISPATCH, t->complete, t->queued);
	set_stage(s, OSD_STAGE_QUEUE, t->queued, t->dequeued);
}

/* For an op ending in a tracked OSD: its layout, target id and the scratch; else NULL. */
static __always_inline struct osd_layout *ending_op(__u32 tgid, __u32 *target,
						    struct osd_scratch **s)
{
	struct osd_layout *l = tracked_osd(tgid, target);

	*s = l ? scratch() : 0;
	return *s ? l : 0;
}

/*
 * Reads what Ceph stamped on the op and sets the stages every op kind has. With msg, the
 * op's Message is read as well, into *msg (NULL when unreadable).
 */
static __always_inline struct op_times *start_op(struct osd_scratch *s, const struct osd_layout *l,
						 const void *op, const void **msg)
{
	const void *m = read_stamps(s, l, op, bpf_ktime_get_ns() + rt_off_ns, msg != 0);

	if (msg)
		*msg = m;
	front_stages(s);
	return &s->t;
}

/* The whole op: message header read -> now (Ceph's op_w/op_r/subop_w latency). */
static __always_inline __u64 whole_op(const struct op_times *t)
{
	return t->recv && t->now > t->recv ? t->now - t->recv : 0;
}

static __always_inline __u64 max64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

static __always_inline __u8 op_class(struct osd_scratch *s, const struct osd_layout *l,
				     const void *op)
{
	if (!(l->have & OSD_HAVE_RMW_FLAGS))
		return OSD_OP_OTHER;
	__u64 f = op_u64(s, l, op, l->op_rmw_flags);
	__u8 rd = !!(f & 0x2), wr = !!(f & (0x4 | 0x40)); /* RMW_FLAG_READ; WRITE, CACHE */

	if (rd && !wr)
		return OSD_OP_READ;
	if (wr && !rd)
		return OSD_OP_WRITE;
	return OSD_OP_OTHER;
}

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
 * Data IO done (aio_wait logged, last_stamp = its end). With at_call_site (P5, the call that
 * logs io_done in _txc_state_proc) now is io_done's end; at the fallback, the entry of
 * _txc_finish_io, now is its start and io_done is left to kv_queued.
 */
static __always_inline void io_stages(struct txc_state *st, bool at_call_site, __u64 last,
				      __u64 now)
{
	if (at_call_site && now >= last)
		set_bs(st, 2, now - last);
	st->io_done = at_call_site ? now : last;
}

static __always_inline int txc_io_done(struct pt_regs *ctx, bool at_call_site)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct osd_layout *l = osd_layout_of(tgid);
	const void *txc = (const void *)PT_REGS_PARM2(ctx);
	struct txc_key key = {.tgid = tgid, .txc = (__u64)txc};
	struct txc_state fresh = {}, *st;
	struct txn_claim *c;
	__u64 start, last, now = bpf_ktime_get_ns();

	if (!l || txc_stamps(l, txc, &start, &last))
		return 0;
	st = bpf_map_lookup_elem(&osd_txcs, &key);
	if (st && st->prepared >= start && last >= st->prepared) {
		set_bs(st, 0, st->prepared - start);
		set_bs(st, 1, last - st->prepared);
		io_stages(st, at_call_site, last, now);
		return 0;
	}
	/* no data aio: prepare fell through to aio_wait on the thread that queued the op */
	c = claim_for(pid_tgid, start);
	if (!c)
		return 0;
	fresh.op = c->op;
	c->queued = CLAIM_NONE; /* taken */
	set_bs(&fresh, 0, last - start);
	set_bs(&fresh, 1, 0);
	io_stages(&fresh, at_call_site, last, now);
	if (bpf_map_update_elem(&osd_txcs, &key, &fresh, BPF_ANY))
		count_lost(LOST_INFLIGHT_FULL);
	return 0;
}

/* P5: the call of log_state_latency(io_done) in BlueStore::_txc_state_proc (rsi = txc). */
SEC("uprobe")
int osd_txc_io_done(struct pt_regs *ctx)
{
	return txc_io_done(ctx, true);
}

/* P5 fallback: BlueStore::_txc_finish_io(TransContext *txc), when the call site is unknown. */
SEC("uprobe")
int osd_txc_finish_io(struct pt_regs *ctx)
{
	return txc_io_done(ctx, false);
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

/*
 * Tier 2, a write joined to its transaction: execute ends when it was queued; the local kv
 * commit, then whatever replicas were later, make the critical path.
 */
static __always_inline void detail_stages(struct osd_scratch *s)
{
	const struct op_times *t = &s->t;

	set_stage(s, OSD_STAGE_EXECUTE, t->dequeued, t->txq);
	if (t->kv_committed && s->n_events) {
		/*
		 * Without events (op tracker off) nothing tells whether replicas were later:
		 * neither stage is guessed.
		 */
		if (t->subops_sent && t->last_subop)
			set_stage(s, OSD_STAGE_REPLICATION, t->kv_committed,
				  max64(t->kv_committed, t->last_subop));
		set_stage(s, OSD_STAGE_COMMIT, max64(t->kv_committed, t->last_subop), t->now);
	} else {
		if (t->subops_sent)
			set_stage(s, OSD_STAGE_REPLICATION, max64(t->subops_sent, t->txq),
				  t->last_subop);
		set_stage(s, OSD_STAGE_COMMIT, max64(t->last_subop, t->local_commit), t->now);
	}
}

/*
 * Tier 1, from the op's events alone: execute ends when the sub-ops went out (Ceph marks it
 * right before queuing the transaction); the local commit is Ceph's op_commit event. The time
 * between them is BlueStore's, which tier 2 splits. A pool of size 1 sends no sub-ops: its
 * execute is not measured here.
 */
static __always_inline void event_stages(struct osd_scratch *s)
{
	const struct op_times *t = &s->t;
	__u64 done = max64(t->local_commit, t->last_subop);

	set_stage(s, OSD_STAGE_EXECUTE, t->dequeued, t->subops_sent);
	if (!t->local_commit)
		return;
	if (t->subops_sent && t->last_subop)
		set_stage(s, OSD_STAGE_REPLICATION, t->local_commit, done);
	set_stage(s, OSD_STAGE_COMMIT, done, t->now);
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

/*
 * P2: PrimaryLogPG::log_op_stats(const OpRequest &op, u64 inb, u64 outb), this = the PG: a
 * client op ends.
 */
SEC("uprobe")
int osd_op_done(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct osd_scratch *s;
	__u32 target;
	struct osd_layout *l = ending_op(tgid, &target, &s);
	const void *op = (const void *)PT_REGS_PARM2(ctx);

	if (!l || !op || bench_cut == CUT_AFTER_LOOKUPS)
		return 0;
	struct op_times *t = start_op(s, l, op, 0);
	__u8 cls = op_class(s, l, op);

	if (bench_cut && bench_cut != CUT_BEFORE_HISTS)
		return 0;

	if (cls == OSD_OP_READ) {
		set_stage(s, OSD_STAGE_EXECUTE, t->dequeued, t->now);
	} else if (take_inflight(s, l, op, tgid) == 0) {
		detail_stages(s);
		count_last_replica(s, target);
	} else {
		event_stages(s);
	}
	osd_fold(target, series_arg(l, OSD_KIND_OP, cls), whole_op(t), PT_REGS_PARM3(ctx),
		 PT_REGS_PARM4(ctx));
	record_slow(s, l, (const void *)PT_REGS_PARM1(ctx), op, tgid, target, cls, whole_op(t));
	return 0;
}

/* P3: ReplicatedBackend::repop_commit(std::shared_ptr<RepModify> rm): a replica commits. */
SEC("uprobe")
int osd_subop_done(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct osd_scratch *s;
	__u32 target;
	struct osd_layout *l = ending_op(tgid, &target, &s);

	if (!l || bench_cut == CUT_AFTER_LOOKUPS)
		return 0;
	const void *rm = (const void *)read_u64((const void *)PT_REGS_PARM2(ctx));
	const void *op = rm ? (const void *)read_u64(rm + l->repmod_op) : 0;

	if (!op)
		return 0;
	const void *msg;
	struct op_times *t = start_op(s, l, op, &msg);

	if (bench_cut && bench_cut != CUT_BEFORE_HISTS)
		return 0;
	/* tier 1 has no stamp between dequeue and the local commit: only tier 2 splits it */
	if (take_inflight(s, l, op, tgid) == 0) {
		set_stage(s, OSD_STAGE_EXECUTE, t->dequeued, t->txq);
		set_stage(s, OSD_STAGE_COMMIT, t->kv_committed ? t->kv_committed : t->txq, t->now);
	} else if (l->detail) {
		count_lost(LOST_NO_START);
	}

	__u32 data_len = 0;

	if (msg && (l->have & OSD_HAVE_DATA_LEN)) {
		__u32 v[2] = {}; /* header.data_len and what follows: a window member is 8 bytes */

		if (!msg_member(s, l, msg, l->msg_data_len, v, 8))
			data_len = v[0];
	}
	osd_fold(target, series_arg(l, OSD_KIND_SUBOP, OSD_OP_WRITE), whole_op(t), data_len, 0);
	return 0;
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
