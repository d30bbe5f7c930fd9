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
#include "marker_args.bpf.h"
#include "targets.bpf.h" /* every object declares it (the daemon shares one) */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set before load: label ops by rbd image, or by process id (collectors.rados.instance_labels). */
const volatile bool instance_labels = false;
/* Ops slower than this are recorded (collectors.rados.slow_op_threshold); 0 turns it off. */
volatile __u64 slow_ns;
/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, kept current by the daemon. */
volatile __s64 rt_off_ns;
/* The exemplar interval, moved by the daemon at each scrape; 0: no exemplars. */
volatile __u32 exemplar_interval;

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

/* The argument specs of each Objecter marker site: few, and only in builds that carry them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RADOS_MARKER_SITES);
	__type(key, __u32); /* marker * RADOS_PAGE + address % RADOS_PAGE */
	__type(value, struct rados_marker_site);
} rados_marker_sites SEC(".maps");

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

/*
 * Exemplars (docs/collectors/rados.md, "Exemplars"): each series' slowest op of the current
 * interval, shared by the CPUs so that the maximum is one for the node; written only when an
 * op is the new maximum, which is also the only time a fast op sends a record. LRU: a series
 * whose client went ages out.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RADOS_STATS_MAX);
	__type(key, struct rados_stats_key);
	__type(value, struct exemplar_max);
} rados_exemplar_max SEC(".maps");

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

/*
 * A slow op's request id (client.<gid>, incarnation, tid) and cluster, from its OBJECTER: the
 * global id where the Objecter's MonClient keeps it, or through the RadosClient that holds
 * that MonClient when the build's DWARF has no MonClient (a RadosClient whose objecter is
 * this one: another owner of the Objecter reads nothing). Dependent reads, on recorded ops
 * only.
 */
static __always_inline void read_reqid(const struct rados_layout *l, const void *objecter,
				       struct rados_slow_record *r)
{
	const void *monc = 0, *osdmap = 0, *owner = 0;

	if (!objecter)
		return;
	if (l->have & (RADOS_HAVE_GID_MONC | RADOS_HAVE_GID_RC))
		bpf_probe_read_user(&monc, sizeof(monc), objecter + l->objecter_monc);
	if (monc && (l->have & RADOS_HAVE_GID_MONC)) {
		if (!bpf_probe_read_user(&r->gid, sizeof(r->gid), monc + l->monc_global_id))
			r->have_reqid |= RADOS_REQID_GID;
	} else if (monc && (l->have & RADOS_HAVE_GID_RC)) {
		const void *client = monc - l->client_monclient;

		if (bpf_probe_read_user(&owner, sizeof(owner), client + l->client_objecter) == 0 &&
		    owner == objecter &&
		    !bpf_probe_read_user(&r->gid, sizeof(r->gid), client + l->client_instance_id))
			r->have_reqid |= RADOS_REQID_GID;
	}
	if (r->gid == 0) /* not authenticated yet: no entity name */
		r->have_reqid &= ~RADOS_REQID_GID;
	if ((l->have & RADOS_HAVE_INC) &&
	    !bpf_probe_read_user(&r->inc, sizeof(r->inc), objecter + l->objecter_inc))
		r->have_reqid |= RADOS_REQID_INC;
	if (l->have & RADOS_HAVE_FSID)
		bpf_probe_read_user(&osdmap, sizeof(osdmap), objecter + l->objecter_osdmap);
	if (osdmap && !bpf_probe_read_user(r->fsid, sizeof(r->fsid), osdmap + l->osdmap_fsid))
		r->have_reqid |= RADOS_REQID_FSID;
}

/*
 * 1 when WHOLE is the new maximum of series KEY in this interval (as in osd.bpf.c). Ops of a
 * client not tracked yet make none: their series is its target's only later.
 */
static __always_inline int new_maximum(const struct rados_stats_key *key, __u64 whole)
{
	__u32 interval = exemplar_interval;
	struct exemplar_max *m;

	if (!interval || key->target == CEPHSCOPE_UNTRACKED)
		return 0;
	m = bpf_map_lookup_elem(&rados_exemplar_max, key);
	if (!m) {
		struct exemplar_max first = {
		    .interval = interval, .slot = hist_slot(whole), .whole_ns = whole};

		bpf_map_update_elem(&rados_exemplar_max, key, &first, BPF_ANY);
		return 1;
	}
	return exemplar_take(m, interval, whole);
}

/*
 * The record of an op that is slow or its series' new maximum (MAXIMUM): who, which object on
 * which OSD and PG, how long, with what result.
 */
static __always_inline void record_op(const struct rados_layout *l, const void *objecter,
				      const void *op, __u64 tid, const struct rados_stats_key *key,
				      __u32 tgid, __u64 now, __u64 whole, __s32 result,
				      __s32 attempts, int maximum)
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
	r->tid = tid;
	r->slow = slow_ns && whole >= slow_ns;
	r->exemplar = maximum != 0;
	r->interval = exemplar_interval;
	__builtin_memcpy(&r->key, key, sizeof(r->key));
	if (!l) { /* a marker build: the tid alone */
		bpf_ringbuf_submit(r, 0);
		return;
	}
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
	read_reqid(l, objecter, r);
	bpf_ringbuf_submit(r, 0);
}

/*
 * The finish of op KEY: the result of the reply this thread is handling when R brings none,
 * and latency, bytes, resends and errors folded. L, OBJECTER and OP are the function's
 * (NULL for a marker build, whose op is known by its TID alone).
 */
static __always_inline int finish_op(const struct rados_layout *l, const void *objecter,
				     const void *op, __u64 key, __u64 tid, __s32 r)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32;
	struct rados_stats_key skey = {};
	struct rados_reply *reply;
	struct rados_stats *stats;
	struct rados_sent sent;
	__s32 result = r;

	reply = thread_reply((__u32)id);
	if (reply && reply->tid == (__u32)id) {
		if (result == 0)
			result = reply->result;
		reply->tid = 0;
	}
	if (take_sent(tgid, key, &sent) || sent.first_send_ns > now) {
		count_lost(LOST_NO_START); /* never sent (pool gone), or sent before attach */
		return 0;
	}
	__u64 delta = now - sent.first_send_ns;
	__s32 attempts = sent.sends;

	skey.target = target_of(tgid);
	skey.pool = sent.pool;
	skey.op = sent.op_class;
	if (instance_labels) {
		if (l)
			instance_of(&skey, l, op, tgid);
		else
			skey.pid = tgid; /* the finish marker names no object */
	}
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
	int maximum = new_maximum(&skey, delta);

	if (maximum || (slow_ns && delta >= slow_ns))
		record_op(l, objecter, op, tid, &skey, tgid, now, delta, result, attempts, maximum);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(rados_finish, void *objecter, void *op, int r)
{
	struct rados_layout *l = hit_layout(ctx, RADOS_PROBE_FINISH);

	if (!l)
		return 0;
	return finish_op(l, objecter, op, (__u64)op, 0, r);
}

/* The argument specs of the marker site this hit is, or NULL. */
static __always_inline struct rados_marker_site *hit_site(struct pt_regs *ctx, __u32 marker)
{
	__u32 key = marker * RADOS_PAGE + (__u32)(PT_REGS_IP(ctx) & (RADOS_PAGE - 1));

	return bpf_map_lookup_elem(&rados_marker_sites, &key);
}

/* An op name's first eight bytes, as a little-endian word. */
#define NAME8(a, b, c, d, e, f, g, h)                                                              \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 |   \
	 (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)

enum marker_op_kind { MARKER_OP_NONE, MARKER_OP_READ, MARKER_OP_WRITE };

/* 1 when A == B, else 0, without a branch: a branch here would multiply the paths the
 * verifier walks at every byte of the ops string. */
static __always_inline __u64 same(__u64 a, __u64 b)
{
	__u64 x = a ^ b, any;

	any = x | -x;
	barrier_var(any); /* else the compiler turns the arithmetic back into a compare and jump */
	return (any >> 63) ^ 1;
}

/* 1 when A < B (both below 2^63), else 0, without a branch. */
static __always_inline __u64 below(__u64 a, __u64 b)
{
	__u64 d = a - b;

	barrier_var(d);
	return d >> 63;
}

/* The data ops of rados_op_moves_bytes, by the names Ceph prints for them. */
static __always_inline __u64 marker_op_kind(__u64 head, __u64 len)
{
	__u64 read = (same(len, 4) & same(head, NAME8('r', 'e', 'a', 'd', 0, 0, 0, 0))) |
		     (same(len, 11) & same(head, NAME8('s', 'p', 'a', 'r', 's', 'e', '-', 'r'))) |
		     (same(len, 9) & same(head, NAME8('s', 'y', 'n', 'c', '_', 'r', 'e', 'a')));
	__u64 write = (same(len, 5) & same(head, NAME8('w', 'r', 'i', 't', 'e', 0, 0, 0))) |
		      (same(len, 9) & same(head, NAME8('w', 'r', 'i', 't', 'e', 'f', 'u', 'l'))) |
		      (same(len, 6) & same(head, NAME8('a', 'p', 'p', 'e', 'n', 'd', 0, 0)));

	return read * MARKER_OP_READ + write * MARKER_OP_WRITE;
}

enum { OPS_NAME, OPS_ARGS, OPS_LENGTH, OPS_SKIP };

/*
 * The parse of an ops string, in a per-CPU scratch rather than on the stack, read and written
 * through a volatile pointer: the verifier tracks no values in map memory, so the walk's
 * states at each byte are alike and it checks one byte's paths per byte, where values it
 * tracked (in registers or on the stack) would multiply them.
 */
struct ops_parse {
	char buf[RADOS_MARKER_OPS_READ];
	__u64 head; /* the op name's first eight bytes */
	__u64 num;
	__u64 bytes;
	__u64 len;
	__u64 kind;
	__u64 state;
	__u64 reads;
	__u64 writes;
	__u64 cut; /* the string filled the buffer: its last op may be cut off */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ops_parse);
} rados_ops_scratch SEC(".maps");

/*
 * One byte C of the ops string into P, in arithmetic on 0/1 masks rather than branches (but
 * the classification, once per op name): each branch would double the paths the verifier
 * walks at every byte.
 */
static __always_inline void ops_step(volatile struct ops_parse *p, __u64 c)
{
	__u64 state = p->state, len = p->len, digit_value = c - '0';
	__u64 sep = same(c, ';') | same(c, 0), keep = sep ^ 1;
	__u64 in_name = same(state, OPS_NAME), in_length = same(state, OPS_LENGTH);
	__u64 name_end = in_name & (same(c, ' ') | sep);
	__u64 grow = in_name ^ name_end; /* a byte of the name */
	__u64 digit = below(c, '9' + 1) & (below(c, '0') ^ 1);
	__u64 take = in_length & digit;
	__u64 length_end = in_length ^ take;
	__u64 tilde = same(state, OPS_ARGS) & same(c, '~');
	__u64 whole = (same(c, 0) & p->cut) ^ 1; /* not a number the read's end cut */

	if (name_end)
		p->kind = marker_op_kind(p->head, len);
	p->reads |= p->kind & MARKER_OP_READ;
	p->writes |= p->kind & MARKER_OP_WRITE;
	p->bytes += p->num * (length_end & (same(p->kind, MARKER_OP_NONE) ^ 1) & whole);
	p->num = (p->num * (1 + 9 * take) + take * digit_value) * (tilde ^ 1);
	p->head = (p->head | (c * (grow & below(len, 8))) << ((len & 7) * 8)) * keep;
	p->len = (len + grow) * keep;
	p->kind = p->kind * keep;
	state += name_end * (OPS_ARGS - OPS_NAME) + tilde * (OPS_LENGTH - OPS_ARGS) +
		 length_end * (OPS_SKIP - OPS_LENGTH);
	p->state = state * keep; /* OPS_NAME: the next op */
}

/*
 * The class and payload of an op from the send marker's ops string, "write 0~4096" or
 * "set-alloc-hint ...;write 0~4096": write when a data op writes, read when one reads, other
 * else; bytes the extent lengths of its data ops. An op cut off at the read's end is not
 * counted.
 */
static __always_inline void marker_ops(const char *ops, struct rados_sent *e)
{
	__u32 zero = 0;
	struct ops_parse *scratch = bpf_map_lookup_elem(&rados_ops_scratch, &zero);
	volatile struct ops_parse *p = scratch;
	long n;

	e->op_class = RADOS_OP_OTHER;
	e->bytes = 0;
	if (!scratch || !ops)
		return;
	n = bpf_probe_read_user_str(scratch->buf, sizeof(scratch->buf), ops);
	if (n <= 0)
		return;
	p->head = p->num = p->bytes = 0;
	p->len = p->kind = p->reads = p->writes = 0;
	p->state = OPS_NAME;
	p->cut = n >= RADOS_MARKER_OPS_READ;
	for (__u32 i = 0; i < RADOS_MARKER_OPS_READ; i++) {
		__u64 c = (__u8)p->buf[i];

		ops_step(p, c);
		if (c == 0)
			break;
	}
	e->op_class = p->writes ? RADOS_OP_WRITE : p->reads ? RADOS_OP_READ : RADOS_OP_OTHER;
	e->bytes = p->bytes;
}

/*
 * objecter_send_op(tid, ..., object, ..., ops): the first send of a tid keeps its time, class
 * and bytes; a send of a tid in flight is a resend.
 */
SEC("uprobe")
int rados_send_marker(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32;
	struct rados_marker_site *site = hit_site(ctx, RADOS_MARKER_SEND);
	struct rados_sent_bucket *b;
	struct rados_sent *e;
	__u64 key;

	if (!site)
		return 0;
	key = RADOS_MARKER_KEY(marker_arg(ctx, &site->tid, 0));
	b = sent_bucket(tgid, key);
	if (!b)
		return 0;
	e = find_way(b, tgid, key);
	if (e && now - e->first_send_ns < INFLIGHT_STALE_NS) {
		if (e->sends < 0xffff)
			e->sends += 1;
		return 0;
	}
	e = way_for(b, tgid, key, now);
	e->op = key;
	e->tgid = tgid;
	e->sends = 1;
	e->pool = RADOS_POOL_UNKNOWN;
	marker_ops((const char *)marker_arg(ctx, &site->ops, 0), e);
	e->first_send_ns = now;
	return 0;
}

/* objecter_finish_op(tid, ...): once per op, as _finish_op. */
SEC("uprobe")
int rados_finish_marker(struct pt_regs *ctx)
{
	struct rados_marker_site *site = hit_site(ctx, RADOS_MARKER_FINISH);
	__u64 tid;

	if (!site)
		return 0;
	tid = marker_arg(ctx, &site->tid, 0);
	return finish_op(0, 0, 0, RADOS_MARKER_KEY(tid), tid, 0);
}
