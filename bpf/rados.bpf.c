// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rados collector: client-observed op latency in librados clients, folded in the kernel.
 *
 * An op's life in the client's Objecter: Objecter::_send_op sends it (again on a resend:
 * a new OSD map, an -EAGAIN or a redirect), Objecter::handle_osd_op_reply takes the OSD's
 * reply, and Objecter::_finish_op retires it, on the reply's thread right after, or on a
 * timeout or cancel with the error as its argument. Three hits per op: the first send's
 * time, with the op's pool, class and bytes, is kept per Op address (a seeded four-way table,
 * below), the reply's result per thread slot, and the finish
 * folds latency, bytes, resends and errors into one per-CPU stats entry. Member offsets
 * come per library build from rados_layouts (its probe profile), found by the probe's
 * address (rados.h).
 *
 * The daemon attaches the probes to the library file (every process, pid -1): the kernel puts
 * them into a process when it maps the file, so a client's first op is seen however soon it
 * comes after the client loads librados. The finish looks up the client's target; a client
 * the daemon has not tracked yet folds under its pid with target CEPHSCOPE_UNTRACKED, and the
 * daemon adds those entries to the client's series once it knows the process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "rados.h"
#include "maps.bpf.h"
#include "targets.bpf.h" /* every object declares it (the daemon shares one) */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set before load: label ops by rbd image, or by process id (collectors.rados.instance_labels). */
const volatile bool instance_labels = false;
/* Ops slower than this are recorded (collectors.rados.slow_op_threshold); 0 turns it off. */
volatile __u64 slow_ns;
/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, kept current by the daemon. */
volatile __s64 rt_off_ns;

/*
 * The layout of the library build each probe is in, by probe and address modulo the page:
 * one inlined array load per hit (720 KiB, preallocated). have 0: no probe of ours there.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RADOS_PROBES *RADOS_PAGE);
	__type(key, __u32); /* probe * RADOS_PAGE + address % RADOS_PAGE */
	__type(value, struct rados_layout);
} rados_layouts SEC(".maps");

/*
 * Ops in flight, in a direct-mapped table of four-way buckets (160 bytes each): a send and its
 * finish cost one inlined array load and plain stores, where an LRU hash's update and
 * delete cost about 0.5 us per op. The key hashes under a seed drawn at each load. A send
 * that finds every way live (and younger than INFLIGHT_STALE_NS) takes the first and counts
 * inflight_full; older records are leftovers of ops whose finish was missed.
 */
const volatile __u64 slot_seed = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RADOS_SENT_BUCKETS);
	__type(key, __u32);
	__type(value, struct rados_sent_bucket);
} rados_sent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RADOS_REPLY_SLOTS);
	__type(key, __u32);
	__type(value, struct rados_reply);
} rados_replies SEC(".maps");

/* Preallocated within a budget per CPU by the daemon (size_percpu_hashes). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, RADOS_STATS_MAX);
	__type(key, struct rados_stats_key);
	__type(value, struct rados_stats);
} rados_stats SEC(".maps");

/* Slow client-op records: rare by design, the only per-op traffic to user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RADOS_RECORDS_BYTES);
} rados_records SEC(".maps");

static const struct rados_stats zero_stats;

/* The layout of the library build whose PROBE this hit is, or NULL. */
static __always_inline struct rados_layout *hit_layout(struct pt_regs *ctx, __u32 probe)
{
	__u32 key = probe * RADOS_PAGE + (__u32)(PT_REGS_IP(ctx) & (RADOS_PAGE - 1));
	struct rados_layout *l = bpf_map_lookup_elem(&rados_layouts, &key);

	return l && (l->have & RADOS_HAVE_OP) ? l : 0;
}

static __always_inline struct rados_reply *thread_reply(__u32 tid)
{
	__u32 slot = tid & (RADOS_REPLY_SLOTS - 1);

	return bpf_map_lookup_elem(&rados_replies, &slot);
}

SEC("uprobe")
int BPF_KPROBE(rados_reply, void *objecter, void *reply)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct rados_layout *l = hit_layout(ctx, RADOS_PROBE_REPLY);
	struct rados_reply *r = thread_reply((__u32)id);
	__s32 result = 0;

	if (!l || !r)
		return 0;
	if (l->have & RADOS_HAVE_RESULT)
		bpf_probe_read_user(&result, sizeof(result), reply + l->reply_result);
	r->tid = (__u32)id;
	r->result = result;
	return 0;
}

/* libstdc++'s std::string: its data pointer and length lead the object. */
struct cxx_string {
	const char *data;
	__u64 len;
};

/* The Op's object name (target.base_oid.name); 0 when read. */
static __always_inline int op_object(const struct rados_layout *l, const void *op,
				     struct cxx_string *s)
{
	if (!(l->have & RADOS_HAVE_OBJECT) ||
	    bpf_probe_read_user(s, sizeof(*s), op + l->op_object) || !s->data)
		return -1;
	return 0;
}

/* Payload bytes of the op's reads and writes: the extent lengths of its data OSDOps. */
static __always_inline __u64 op_bytes(const struct rados_layout *l, const void *op)
{
	/* the vector's data pointer and size, adjacent (checked by the plan): one read */
	struct {
		const char *start;
		__u64 size;
	} vec = {};
	/* ceph_osd_op's head as the wire format packs it: op code, flags, extent offset, length */
	struct {
		__u16 code;
		__u32 flags;
		__u64 offset;
		__u64 length;
	} __attribute__((packed)) head;
	__u64 bytes = 0;

	if (!(l->have & RADOS_HAVE_BYTES) ||
	    bpf_probe_read_user(&vec, sizeof(vec), op + l->op_ops_start))
		return 0;
	for (__u32 i = 0; i < RADOS_OPS_READ; i++) {
		if (i >= vec.size ||
		    bpf_probe_read_user(&head, sizeof(head),
					vec.start + (__u64)i * l->osdop_size + l->osdop_code))
			break;
		if (rados_op_moves_bytes(head.code))
			bytes += head.length;
	}
	return bytes;
}

static __always_inline struct rados_sent_bucket *sent_bucket(__u32 tgid, __u64 op)
{
	__u32 slot = inflight_slot(op, tgid, slot_seed, RADOS_SENT_BUCKETS);

	return bpf_map_lookup_elem(&rados_sent, &slot);
}

/* The live record of op (TGID, OP) in its bucket, or NULL. */
static __always_inline struct rados_sent *find_way(struct rados_sent_bucket *b, __u32 tgid,
						   __u64 op)
{
#pragma unroll
	for (__u32 i = 0; i < RADOS_SENT_WAYS; i++) {
		struct rados_sent *e = &b->way[i];

		if (e->first_send_ns && e->op == op && e->tgid == tgid)
			return e;
	}
	return 0;
}

/*
 * The way op (TGID, OP) takes: its own (a record left at this address by an op whose finish
 * was missed is stale), else a free or stale one, else the first, whose op is lost.
 */
static __always_inline struct rados_sent *way_for(struct rados_sent_bucket *b, __u32 tgid, __u64 op,
						  __u64 now)
{
	struct rados_sent *own = find_way(b, tgid, op);

	if (own)
		return own;
#pragma unroll
	for (__u32 i = 0; i < RADOS_SENT_WAYS; i++) {
		if (!b->way[i].first_send_ns || now - b->way[i].first_send_ns >= INFLIGHT_STALE_NS)
			return &b->way[i];
	}
	count_lost(LOST_INFLIGHT_FULL);
	return &b->way[0];
}

/*
 * The first send keeps its time and what the finish folds (pool, class, bytes); a resend
 * (attempts counts the sends so far) only counts itself in the op's record.
 */
SEC("uprobe")
int BPF_KPROBE(rados_send, void *objecter, void *op)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct rados_layout *l = hit_layout(ctx, RADOS_PROBE_SEND);
	struct rados_sent_bucket *b;
	struct rados_sent *e;
	__s32 attempts, flags = 0;

	if (!l || bpf_probe_read_user(&attempts, sizeof(attempts), op + l->op_attempts))
		return 0;
	b = sent_bucket(tgid, (__u64)op);
	if (!b)
		return 0;
	if (attempts != 0) {
		e = find_way(b, tgid, (__u64)op);
		if (e)
			e->sends = attempts < 0xfffe ? attempts + 1 : 0xffff;
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();

	e = way_for(b, tgid, (__u64)op, now);
	e->op = (__u64)op;
	e->tgid = tgid;
	e->sends = 1;
	e->pool = 0;
	bpf_probe_read_user(&e->pool, sizeof(e->pool), op + l->op_pool);
	bpf_probe_read_user(&flags, sizeof(flags), op + l->op_flags);
	e->op_class = rados_op_class(flags);
	e->bytes = op_bytes(l, op);
	e->first_send_ns = now;
	return 0;
}

/* Op (TGID, OP)'s record, copied and taken out of the table; -1 when not there. */
static __always_inline int take_sent(__u32 tgid, __u64 op, struct rados_sent *out)
{
	struct rados_sent_bucket *b = sent_bucket(tgid, op);
	struct rados_sent *e = b ? find_way(b, tgid, op) : 0;

	if (!e)
		return -1;
	*out = *e;
	e->first_send_ns = 0;
	return 0;
}

/* "rbd_data.<id>.<n>": an rbd image's data object. */
static __always_inline __u32 image_prefix(const char *name)
{
	if (name[0] == 'r' && name[1] == 'b' && name[2] == 'd' && name[3] == '_' &&
	    name[4] == 'd' && name[5] == 'a' && name[6] == 't' && name[7] == 'a' && name[8] == '.')
		return 9;
	return 0;
}

/*
 * The rbd image id of an op on an image's data into KEY, else the process id: librbd's
 * metadata ops (header, object map, watch, lock) go with the process that made them.
 */
static __always_inline void instance_of(struct rados_stats_key *key, const struct rados_layout *l,
					const void *op, __u32 tgid)
{
	struct cxx_string str = {};
	char name[RADOS_OBJECT_READ] = {};
	__u32 start, i, n;

	key->pid = tgid;
	if (op_object(l, op, &str) || !str.len)
		return;
	/* no byte past the name's end: a heap string may end at an unmapped page */
	n = str.len < RADOS_OBJECT_READ - 1 ? str.len : RADOS_OBJECT_READ - 1;
	barrier_var(n);
	if (n == 0 || n >= RADOS_OBJECT_READ || bpf_probe_read_user(name, n, str.data))
		return;
	start = image_prefix(name);
	if (!start || str.len <= start)
		return;
	key->pid = 0;
	for (i = 0; i < RADOS_IMAGE_ID_LEN - 1; i++) {
		__u32 at = start + i;
		char c;

		if (at >= str.len || at >= RADOS_OBJECT_READ - 1)
			break;
		c = name[at];
		if (c == '.' || c == 0)
			break;
		key->image[i] = c;
	}
}

/* A slow op's record: who, which object on which OSD and PG, how long, with what result. */
static __always_inline void record_slow(const struct rados_layout *l, const void *op,
					const struct rados_stats_key *key, __u32 tgid, __u64 now,
					__u64 whole, __s32 result, __s32 attempts)
{
	struct rados_slow_record *r;
	struct cxx_string str = {};

	r = bpf_ringbuf_reserve(&rados_records, sizeof(*r), 0);
	if (!r) {
		count_lost(LOST_RECORD);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->time_ns = now + rt_off_ns;
	r->whole_ns = whole;
	r->pool = key->pool;
	r->tgid = tgid;
	r->target = key->target;
	r->op = key->op;
	r->result = result;
	r->osd = -1;
	r->resends = attempts > 1 ? attempts - 1 : 0;
	if (l->have & RADOS_HAVE_IDS) {
		bpf_probe_read_user(&r->tid, sizeof(r->tid), op + l->op_tid);
		bpf_probe_read_user(&r->osd, sizeof(r->osd), op + l->op_osd);
		bpf_probe_read_user(&r->pg_seed, sizeof(r->pg_seed), op + l->op_pg_seed);
		r->have_ids = 1;
	}
	if (!op_object(l, op, &str)) {
		r->object_len = (__u32)str.len;
		bpf_probe_read_user_str(r->object, sizeof(r->object), str.data);
	}
	bpf_ringbuf_submit(r, 0);
}

SEC("uprobe")
int BPF_KPROBE(rados_finish, void *objecter, void *op, int r)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32;
	struct rados_layout *l = hit_layout(ctx, RADOS_PROBE_FINISH);
	struct rados_stats_key skey = {};
	struct rados_reply *reply;
	struct rados_stats *stats;
	struct rados_sent sent;
	__s32 result = r;

	if (!l)
		return 0;
	/* the result of the reply this thread is handling, when the finish did not bring one */
	reply = thread_reply((__u32)id);
	if (reply && reply->tid == (__u32)id) {
		if (result == 0)
			result = reply->result;
		reply->tid = 0;
	}
	if (take_sent(tgid, (__u64)op, &sent) || sent.first_send_ns > now) {
		count_lost(LOST_NO_START); /* never sent (pool gone), or sent before attach */
		return 0;
	}
	__u64 delta = now - sent.first_send_ns;
	__s32 attempts = sent.sends;

	skey.target = target_of(tgid);
	skey.pool = sent.pool;
	skey.op = sent.op_class;
	if (instance_labels)
		instance_of(&skey, l, op, tgid);
	if (skey.target == CEPHSCOPE_UNTRACKED)
		skey.pid = tgid; /* not tracked yet: the daemon adds it to its target's series */
	stats = lookup_or_init(&rados_stats, &skey, &zero_stats);
	if (!stats)
		return 0;
	hist_add(&stats->latency, delta);
	stats->bytes += sent.bytes;
	if (attempts > 1)
		stats->resends += attempts - 1;
	if (result < 0) {
		__u32 c = rados_error_class(result);

		if (c < RADOS_ERR_COUNT)
			stats->errors[c] += 1;
	}
	if (slow_ns && delta >= slow_ns)
		record_slow(l, op, &skey, tgid, now, delta, result, attempts);
	return 0;
}
