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
 * profile). Tier 2's programs are in osd_detail.bpf.h.
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

/* The op's series: in its process's slot (STATS_SLOT = 1 + the slot), else in the hash. */
static __always_inline struct osd_stats *series_of(__u32 target, __u32 stats_slot, __u32 kind,
						   __u32 op)
{
	struct osd_stats_key key = {.target = target, .kind = kind, .op = op};

	if (stats_slot - 1 < OSD_STATS_SLOTS && op < OSD_OP_COUNT) {
		__u32 i = (stats_slot - 1) * OSD_SLOT_SERIES + osd_slot_series(kind, op);
		struct osd_stats *st = bpf_map_lookup_elem(&osd_stats_slots, &i);

		/*
		 * Keeps this call apart from the hash's: clang may merge the two into one call
		 * instruction, and the verifier inlines a lookup only where the call has one map (a
		 * merged call cost +240 ns per hit, through the generic helper).
		 */
		barrier_var(st);
		return st;
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
 * Exemplars (docs/collectors/osd.md, "Exemplars"): the slowest op of each slot series in the
 * current interval, which the daemon starts anew at each scrape by moving exemplar_interval
 * (osd_records.bpf.h). One array shared by the CPUs, so that a series' maximum is one for the
 * node: an op reads it, and writes it only when it is the new maximum, which is also the only
 * time a fast op sends a record. Two CPUs racing may both send one; nothing else is lost.
 */
struct exemplar_max osd_exemplar_max[OSD_STATS_SLOTS * OSD_SLOT_SERIES];

/* 1 when WHOLE is the new maximum of series SERIES (series_arg()) in this interval. */
static __always_inline int new_maximum(__u32 series, __u64 whole)
{
	__u32 stats_slot = (series >> 16) - 1, op = series & 0xff, interval = exemplar_interval;

	if (!interval || stats_slot >= OSD_STATS_SLOTS || op >= OSD_OP_COUNT)
		return 0;
	__u32 i = stats_slot * OSD_SLOT_SERIES + osd_slot_series((series >> 8) & 0xff, op);

	if (i >= OSD_STATS_SLOTS * OSD_SLOT_SERIES)
		return 0;
	return exemplar_take(&osd_exemplar_max[i], interval, whole);
}

/*
 * Folds the scratch's measured stages and the whole op (series = series_arg()) into the op's
 * series with one map lookup; a slow op is counted under its longest stage. Returns 1 when
 * the op is its series' new slowest of the exemplar interval. A global function: the
 * verifier checks it once, not once per caller's path.
 */
__noinline int osd_fold(__u32 target, __u32 series, __u64 whole, __u64 in, __u64 out)
{
	struct osd_scratch *s = scratch();
	struct osd_stats *st;
	int maximum;

	if (!s)
		return 0;
	st = series_of(target, series >> 16, (series >> 8) & 0xff, series & 0xff);
	if (!st || bench_cut == CUT_BEFORE_HISTS)
		return 0;
	maximum = new_maximum(series, whole);
#pragma unroll
	for (__u32 i = 0; i < OSD_STAGE_COUNT; i++) {
		if (s->known & (1u << i)) {
			slots_add(st->slots[i], s->d[i]);
			st->sum_ns[i] += s->d[i];
		}
	}
	slots_add(st->slots[OSD_STAGE_WHOLE], whole);
	st->sum_ns[OSD_STAGE_WHOLE] += whole;
	st->bytes_in += in;
	st->bytes_out += out;
	if (!slow_ns || whole < slow_ns)
		return maximum;
	st->slow[OSD_STAGE_WHOLE] += 1;
	__u32 longest = osd_longest_stage();

	barrier_var(longest);
	if (longest < OSD_STAGE_COUNT)
		st->slow[longest] += 1;
	return maximum;
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

/* Tier 2's programs: the op's transaction, BlueStore's states, the replicas' replies. */
#include "osd_detail.bpf.h"

/* The bluestore layer: what BlueStore and BlueFS write to the block device. */
#include "osd_bluestore.bpf.h"

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
	int maximum = osd_fold(target, series_arg(l, OSD_KIND_OP, cls), whole_op(t),
			       PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx));

	record_op(s, l, (const void *)PT_REGS_PARM1(ctx), op, tgid, target, cls, whole_op(t),
		  OSD_RECORD_OP, maximum);
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
	int maximum =
	    osd_fold(target, series_arg(l, OSD_KIND_SUBOP, OSD_OP_WRITE), whole_op(t), data_len, 0);

	record_op(s, l, 0, op, tgid, target, OSD_OP_WRITE, whole_op(t), OSD_RECORD_REPLICA,
		  maximum);
	return 0;
}
