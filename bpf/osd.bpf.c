// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * osd collector: per-op stage latency in ceph-osd, from two uprobes per op and OSD.
 *
 * Ceph stamps most boundaries of an op itself (the Message's receive stamps, the OpRequest's
 * dequeue time and TrackedOp events). One probe where the op completes reads them all:
 * PrimaryLogPG::log_op_stats (client ops, primary) and ReplicatedBackend::repop_commit
 * (replicated writes, replica). The one boundary Ceph does not record, "transaction queued",
 * comes from BlueStore::queue_transactions, keyed by the client's reqid in an LRU map.
 * Member offsets come per process from osd_layouts (the build's probe profile).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "osd.h"
#include "maps.bpf.h"
#include "targets.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, kept current by the daemon. */
volatile __s64 rt_off_ns;
/* Ops slower than this are counted in osd_stats.slow; 0 turns the count off. */
volatile __u64 slow_ns;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OSD_LAYOUTS_MAX);
	__type(key, __u32); /* tgid */
	__type(value, struct osd_layout);
} osd_layouts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, OSD_INFLIGHT_MAX);
	__type(key, struct osd_op_key);
	__type(value, __u64); /* transaction queued, CLOCK_MONOTONIC ns */
} osd_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, OSD_STATS_MAX);
	__type(key, struct osd_stats_key);
	__type(value, struct osd_stats);
} osd_stats SEC(".maps");

/* Room for 32 events so that a masked index is in bounds for the verifier. */
#define EVENT_SLOTS 32
struct event_buf {
	__u8 bytes[EVENT_SLOTS * OSD_EVENT_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event_buf);
} event_scratch SEC(".maps");

static const struct osd_stats zero_stats;

/* A utime_t {u32 sec; u32 nsec} at addr, in ns; 0 when unreadable. */
static __always_inline __u64 read_utime(const void *addr)
{
	__u32 t[2];

	if (bpf_probe_read_user(t, sizeof(t), addr))
		return 0;
	return (__u64)t[0] * 1000000000ULL + t[1];
}

static __always_inline __u64 read_u64(const void *addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), addr);
	return v;
}

static __always_inline int read_key(const struct osd_layout *l, const void *op, __u32 tgid,
				    struct osd_op_key *key)
{
	__u64 id[3];

	if (!(l->have & OSD_HAVE_REQID) || bpf_probe_read_user(id, sizeof(id), op + l->op_reqid))
		return -1;
	__builtin_memset(key, 0, sizeof(*key));
	key->tgid = tgid;
	key->name_type = (__u8)id[0];
	key->name_num = (__s64)id[1];
	key->tid = id[2];
	return 0;
}

/* Interval a -> b, or 0 when either end is unknown or they are out of order. */
static __always_inline __u64 span(__u64 a, __u64 b)
{
	return (a && b && b >= a) ? b - a : 0;
}

/* Stamps of one op, realtime ns; 0 = not known. */
struct op_times {
	__u64 recv, throttle, complete, queued, dequeued, subops_sent, last_subop, local_commit;
	__u64 txq; /* transaction queued */
	__u64 now;
};

/* First 8 bytes of a std::string's text, from the copy of its event (SSO) or its heap. */
static __always_inline __u64 event_word(const __u8 *ev, __u64 len, __u32 at)
{
	__u64 w = 0;

	if (len <= 15) {
		if (at < 16)
			__builtin_memcpy(&w, ev + 24 + at, 8);
		return w;
	}
	bpf_probe_read_user(&w, sizeof(w), (const void *)(*(__u64 *)(ev + 8) + at));
	return w;
}

/* The first 8 characters of the event names matched, as little-endian words. */
#define W_QUEUED_F 0x665f646575657571ULL /* "queued_f" */
#define W_OP_COMMI 0x696d6d6f635f706fULL /* "op_commi" */
#define W_SUB_OP_C 0x635f706f5f627573ULL /* "sub_op_c" */
#define W_WAITING_ 0x20676e6974696177ULL /* "waiting " */
#define W_FOR_SUBO 0x6f62757320726f66ULL /* "for subo" */

struct scan_ctx {
	struct op_times *t;
	__u32 n;
};

/* One event of the bulk copy; a bpf_loop callback, so the verifier walks it once. */
static long scan_event(__u32 i, void *arg)
{
	struct scan_ctx *c = arg;
	struct op_times *t = c->t;
	struct event_buf *buf;
	__u32 zero = 0;

	if (i >= c->n || i >= OSD_EVENTS_MAX)
		return 1;
	buf = bpf_map_lookup_elem(&event_scratch, &zero);
	if (!buf)
		return 1;
	__u32 k = i;

	asm volatile("%0 &= 31" : "+r"(k)); /* EVENT_SLOTS - 1, kept for the verifier */
	const __u8 *ev = buf->bytes + k * OSD_EVENT_SIZE;
	__u64 stamp = (__u64)*(__u32 *)ev * 1000000000ULL + *(__u32 *)(ev + 4);
	__u64 len = *(__u64 *)(ev + 16);

	if (len == 13) {
		if (!t->queued && event_word(ev, len, 0) == W_QUEUED_F)
			t->queued = stamp;
	} else if (len == 9) {
		if (event_word(ev, len, 0) == W_OP_COMMI)
			t->local_commit = stamp;
	} else if (len == 17) {
		if (stamp > t->last_subop && event_word(ev, len, 0) == W_SUB_OP_C)
			t->last_subop = stamp;
	} else if (len >= 24 && !t->subops_sent) {
		if (event_word(ev, len, 0) == W_WAITING_ && event_word(ev, len, 8) == W_FOR_SUBO)
			t->subops_sent = stamp;
	}
	return 0;
}

/*
 * Scans TrackedOp::events (a vector of {utime_t stamp; std::string str}) for the stamps the
 * stages need, from one bulk read: the short names sit in the strings' inline buffers.
 */
static __always_inline void scan_events(const struct osd_layout *l, const void *op,
					struct op_times *t)
{
	struct event_buf *buf;
	__u32 zero = 0;
	__u64 vec[2];

	if (!(l->have & OSD_HAVE_EVENTS) ||
	    bpf_probe_read_user(vec, sizeof(vec), op + l->op_events) || vec[1] <= vec[0])
		return;
	__u64 n = (vec[1] - vec[0]) / OSD_EVENT_SIZE;

	if (n > OSD_EVENTS_MAX)
		n = OSD_EVENTS_MAX;
	buf = bpf_map_lookup_elem(&event_scratch, &zero);
	if (!buf)
		return;
	__u32 size = n * OSD_EVENT_SIZE;

	if (size > OSD_EVENTS_MAX * OSD_EVENT_SIZE ||
	    bpf_probe_read_user(buf->bytes, size, (const void *)vec[0]))
		return;
	struct scan_ctx c = {.t = t, .n = n};

	bpf_loop(OSD_EVENTS_MAX, scan_event, &c, 0);
}

/* Reads the Message and OpRequest stamps every op kind has. */
static __always_inline void read_stamps(const struct osd_layout *l, const void *op,
					struct op_times *t)
{
	const void *msg = (const void *)read_u64(op + l->op_request);

	if (msg && (l->have & OSD_HAVE_STAMPS)) {
		t->recv = read_utime(msg + l->msg_recv_stamp);
		t->throttle = read_utime(msg + l->msg_throttle_stamp);
		t->complete = read_utime(msg + l->msg_complete_stamp);
	}
	if (l->have & OSD_HAVE_DEQUEUED)
		t->dequeued = read_utime(op + l->op_dequeued_time);
	scan_events(l, op, t);
}

/* The queue time of the op's transaction, consumed; 0 when it was not seen. */
static __always_inline __u64 take_txq(const struct osd_layout *l, const void *op, __u32 tgid)
{
	struct osd_op_key key;
	__u64 *ts, txq;

	if (read_key(l, op, tgid, &key))
		return 0;
	ts = bpf_map_lookup_elem(&osd_inflight, &key);
	if (!ts)
		return 0;
	txq = *ts + rt_off_ns;
	bpf_map_delete_elem(&osd_inflight, &key);
	return txq;
}

/*
 * Adds one sample (and a slow op, and bytes) to one series. A global function: the verifier
 * checks it once, not once per stage of every caller's path.
 */
__noinline int osd_fold_one(__u32 target, __u32 kind_op_stage, __u64 ns, __u64 in, __u64 out)
{
	struct osd_stats_key key = {
		.target = target,
		.kind = (kind_op_stage >> 16) & 0xff,
		.op = (kind_op_stage >> 8) & 0xff,
		.stage = kind_op_stage & 0xff,
	};
	struct osd_stats *s = lookup_or_init(&osd_stats, &key, &zero_stats);

	if (!s)
		return 0;
	if (ns)
		hist_add(&s->latency, ns);
	s->slow += kind_op_stage >> 24;
	s->bytes_in += in;
	s->bytes_out += out;
	return 0;
}

/* Packs a series key and the slow flag into one argument (global functions take five). */
#define KOS(slow, kind, op, stage)                                                         \
	(((__u32)(slow) << 24) | ((__u32)(kind) << 16) | ((__u32)(op) << 8) | (stage))

/* Folds the stages and the whole op; a slow op is counted under its longest stage. */
static __always_inline void fold(__u32 target, __u8 kind, __u8 op, const __u64 *d, __u64 whole,
				 __u64 in, __u64 out)
{
	__u32 longest = OSD_STAGE_COUNT;
	__u64 max = 0;

#pragma unroll
	for (__u32 i = 0; i < OSD_STAGE_COUNT; i++) {
		if (d[i] > max) {
			max = d[i];
			longest = i;
		}
	}
	__u64 slow = slow_ns && whole >= slow_ns;

#pragma unroll
	for (__u32 i = 0; i < OSD_STAGE_COUNT; i++) {
		if (d[i] || (slow && i == longest))
			osd_fold_one(target, KOS(slow && i == longest, kind, op, i), d[i], 0, 0);
	}
	osd_fold_one(target, KOS(slow, kind, op, OSD_STAGE_WHOLE), whole, in, out);
}

static __always_inline __u8 op_class(const struct osd_layout *l, const void *op)
{
	if (!(l->have & OSD_HAVE_RMW_FLAGS))
		return OSD_OP_OTHER;
	__u64 f = read_u64(op + l->op_rmw_flags);
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
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct osd_layout *l = bpf_map_lookup_elem(&osd_layouts, &tgid);
	struct osd_op_key key;
	const void *op;

	if (!l)
		return 0;
	op = (const void *)read_u64((const void *)PT_REGS_PARM4(ctx)); /* by-value intrusive_ptr */
	if (!op || read_key(l, op, tgid, &key))
		return 0; /* PG metadata and recovery transactions carry no op */
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&osd_inflight, &key, &now, BPF_ANY))
		count_lost(LOST_INFLIGHT_FULL);
	return 0;
}

/* The calling OSD's layout, with its target id in *target; NULL for any other process. */
static __always_inline struct osd_layout *tracked_osd(__u32 tgid, __u32 *target)
{
	struct osd_layout *l = bpf_map_lookup_elem(&osd_layouts, &tgid);

	if (!l)
		return 0;
	*target = current_target();
	return *target == CEPHSCOPE_UNTRACKED ? 0 : l;
}

/* The stages an op and a replicated write share: from the Message stamps to dequeue. */
static __always_inline void front_stages(const struct op_times *t, __u64 *d)
{
	d[OSD_STAGE_THROTTLE] = span(t->recv, t->throttle);
	d[OSD_STAGE_RECEIVE] = span(t->throttle, t->complete);
	d[OSD_STAGE_DISPATCH] = span(t->complete, t->queued);
	d[OSD_STAGE_QUEUE] = span(t->queued, t->dequeued);
}

/* P2: PrimaryLogPG::log_op_stats(const OpRequest &op, u64 inb, u64 outb): a client op ends. */
SEC("uprobe")
int osd_op_done(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 d[OSD_STAGE_COUNT] = {};
	struct op_times t = {};
	__u32 target;
	struct osd_layout *l = tracked_osd(tgid, &target);

	if (!l)
		return 0;
	t.now = bpf_ktime_get_ns() + rt_off_ns;
	const void *op = (const void *)PT_REGS_PARM2(ctx);
	__u8 cls = op_class(l, op);

	read_stamps(l, op, &t);
	if (cls != OSD_OP_READ) {
		t.txq = take_txq(l, op, tgid);
		if (!t.txq && cls == OSD_OP_WRITE)
			count_lost(LOST_NO_START);
	}
	front_stages(&t, d);
	d[OSD_STAGE_EXECUTE] = span(t.dequeued, t.txq ? t.txq : t.now);
	if (t.txq) {
		__u64 start = t.subops_sent > t.txq ? t.subops_sent : t.txq;
		__u64 commits = t.last_subop > t.local_commit ? t.last_subop : t.local_commit;

		if (t.subops_sent)
			d[OSD_STAGE_REPLICATION] = span(start, t.last_subop);
		d[OSD_STAGE_COMMIT] = span(commits, t.now);
	}
	fold(target, OSD_KIND_OP, cls, d, span(t.recv, t.now), PT_REGS_PARM3(ctx),
	     PT_REGS_PARM4(ctx));
	return 0;
}

/* P3: ReplicatedBackend::repop_commit(std::shared_ptr<RepModify> rm): a replica commits. */
SEC("uprobe")
int osd_subop_done(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 d[OSD_STAGE_COUNT] = {};
	struct op_times t = {};
	__u32 target;
	struct osd_layout *l = tracked_osd(tgid, &target);

	if (!l)
		return 0;
	t.now = bpf_ktime_get_ns() + rt_off_ns;
	const void *rm = (const void *)read_u64((const void *)PT_REGS_PARM2(ctx));
	const void *op = rm ? (const void *)read_u64(rm + l->repmod_op) : 0;

	if (!op)
		return 0;
	read_stamps(l, op, &t);
	t.txq = take_txq(l, op, tgid);
	if (!t.txq)
		count_lost(LOST_NO_START);
	front_stages(&t, d);
	d[OSD_STAGE_EXECUTE] = span(t.dequeued, t.txq);
	d[OSD_STAGE_COMMIT] = span(t.txq, t.now);

	__u64 data_len = 0;

	if (l->have & OSD_HAVE_DATA_LEN) {
		const void *msg = (const void *)read_u64(op + l->op_request);
		__u32 len = 0;

		if (msg)
			bpf_probe_read_user(&len, sizeof(len), msg + l->msg_data_len);
		data_len = len;
	}
	fold(target, OSD_KIND_SUBOP, OSD_OP_WRITE, d, span(t.recv, t.now), data_len, 0);
	return 0;
}
