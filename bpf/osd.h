/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between osd.bpf.c and daemon/collectors/osd/osd_collector.cpp. */
#ifndef CEPHSCOPE_OSD_H
#define CEPHSCOPE_OSD_H

#include "cephscope.h"

/*
 * The `stage` label, in the order of the op's critical path (docs/collectors/osd.md): the
 * stages of one op never overlap, so their sum is at most the whole op.
 */
enum cephscope_osd_stage {
	OSD_STAGE_THROTTLE,	/* message header read -> dispatch throttle granted */
	OSD_STAGE_RECEIVE,	/* -> message fully read */
	OSD_STAGE_DISPATCH,	/* -> queued for the PG (event queued_for_pg) */
	OSD_STAGE_QUEUE,	/* -> dequeued by an OSD shard thread */
	OSD_STAGE_EXECUTE,	/* -> transaction queued to BlueStore (reads: -> reply) */
	OSD_STAGE_BS_PREPARE,	/* BlueStore TransContext start -> prepared (aio submitted) */
	OSD_STAGE_BS_AIO_WAIT,	/* -> data IO complete */
	OSD_STAGE_BS_IO_DONE,	/* -> in order after earlier transactions, queued for kv */
	OSD_STAGE_BS_KV_QUEUED, /* -> submitted by the kv sync thread (includes the flush) */
	OSD_STAGE_BS_KV_COMMIT, /* -> kv commit done */
	OSD_STAGE_REPLICATION,	/* local work done -> the last replica commit, if later */
	OSD_STAGE_COMMIT,	/* all commits -> reply (replica: local commit -> reply) */
	OSD_STAGE_COUNT,
	OSD_STAGE_WHOLE = OSD_STAGE_COUNT, /* the whole op: message header read -> reply */
};

/* The BlueStore stages, in the order of struct osd_inflight.bs. */
#define OSD_BS_FIRST OSD_STAGE_BS_PREPARE
#define OSD_BS_COUNT 5

/* The `op` label: Ceph's own op_r / op_w split; op_rw and the rest are "other". */
enum cephscope_osd_op {
	OSD_OP_READ,
	OSD_OP_WRITE,
	OSD_OP_OTHER,
	OSD_OP_COUNT,
};

enum cephscope_osd_kind {
	OSD_KIND_OP,	/* client op, on its primary */
	OSD_KIND_SUBOP, /* replicated write received from a primary (MOSDRepOp) */
};

/* Members found in the target's build (osd_layout.have). A stage needs all of its members. */
#define OSD_HAVE_REQID (1u << 0)	/* OpRequest::reqid: the in-flight key */
#define OSD_HAVE_STAMPS (1u << 1)	/* Message recv/throttle/recv_complete stamps */
#define OSD_HAVE_DEQUEUED (1u << 2)	/* OpRequest::dequeued_time */
#define OSD_HAVE_EVENTS (1u << 3)	/* TrackedOp::events, std::vector of 40-byte events */
#define OSD_HAVE_RMW_FLAGS (1u << 4)	/* OpRequest::op_info.rmw_flags */
#define OSD_HAVE_DATA_LEN (1u << 5)	/* Message::header.data_len */
#define OSD_HAVE_TXC (1u << 6)		/* BlueStore::TransContext start, last_stamp */
#define OSD_HAVE_MSG_WINDOW (1u << 7)	/* the Message members read fit one copy */
#define OSD_HAVE_OP_WINDOW (1u << 8)	/* the OpRequest members read fit one copy */
#define OSD_HAVE_TXC_ADJACENT (1u << 9) /* TransContext::last_stamp right after start */
#define OSD_HAVE_PG (1u << 10)		/* PG::pg_id: the pool and PG of a slow op's record */
#define OSD_HAVE_OBJECT (1u << 11)	/* MOSDOp::hobj.oid.name: a slow op's object */
#define OSD_HAVE_REPLY (1u << 12)     /* MOSDRepOpReply::reqid, Message::header.src: who answered */
#define OSD_HAVE_BS_IO (1u << 13)     /* the bluestore layer's members (probe set bluestore-io) */
#define OSD_HAVE_REQID_INC (1u << 14) /* OpRequest::reqid.inc right after tid: a record's inc */

/* Where P5 (after the call that logs io_done) finds the transaction: the callee-saved register
 * the call's set-up copied it from (osd_layout.io_done_txc_reg). */
enum cephscope_osd_saved_reg {
	OSD_REG_NONE,
	OSD_REG_RBX,
	OSD_REG_RBP,
	OSD_REG_R12,
	OSD_REG_R13,
	OSD_REG_R14,
	OSD_REG_R15,
};

/*
 * The `kind` label of the bluestore layer: what a write BlueStore hands its block device is
 * for, told apart by its IOContext (docs/collectors/osd.md#the-bluestore-layer).
 */
enum cephscope_bs_kind {
	OSD_BS_DATA,	 /* a transaction's data to new space (TransContext::ioc) */
	OSD_BS_DEFERRED, /* deferred writes applied in place (DeferredBatch::ioc) */
	OSD_BS_WAL,	 /* BlueFS writes with RocksDB's WAL hint (Env::WLTH_SHORT) */
	OSD_BS_BLUEFS,	 /* BlueFS's other writes: its log, SST files, superblock */
	OSD_BS_OTHER,	 /* any other IOContext */
	OSD_BS_KIND_COUNT,
};

/* RocksDB's Env::WLTH_SHORT, the write-life hint of its WAL files, which BlueFS passes on. */
#define OSD_BS_WAL_HINT 2

/* Member offsets of one ceph-osd build, from its probe profile; one entry per OSD process. */
struct osd_layout {
	__u32 tgid; /* the OSD process (first: bpf/layouts.bpf.h) */
	__u32 have;
	__u32 target;		  /* the OSD's target id (its uprobes fire in this process only) */
	__u32 detail;		  /* tier 2 attached: ops are joined to their transactions */
	__u32 op_request;	  /* OpRequest::request (Message *) */
	__u32 op_reqid;		  /* OpRequest::reqid: name._type, name._num @+8, tid @+16 */
	__u32 op_rmw_flags;	  /* OpRequest::op_info.rmw_flags (u64) */
	__u32 op_dequeued_time;	  /* OpRequest::dequeued_time (utime_t) */
	__u32 op_events;	  /* TrackedOp::events (begin, end pointers) */
	__u32 msg_recv_stamp;	  /* Message::recv_stamp (utime_t) */
	__u32 msg_throttle_stamp; /* Message::throttle_stamp */
	__u32 msg_complete_stamp; /* Message::recv_complete_stamp */
	__u32 msg_data_len;	  /* Message::header.data_len (le32) */
	__u32 repmod_op;	  /* ReplicatedBackend::RepModify::op (OpRequest *) */
	__u32 txc_start;	  /* BlueStore::TransContext::start (mono_clock, ns) */
	__u32 txc_last_stamp;	  /* TransContext::last_stamp: the latest state change */
	__u32 op_window;	  /* OpRequest bytes [op_window, +op_window_len) hold every */
	__u32 op_window_len;	  /* member the end-of-op probes read (one copy, not five) */
	__u32 msg_window;	  /* Message bytes [msg_window, +msg_window_len) hold the */
	__u32 msg_window_len;	  /* stamps and header.data_len (one copy, not four) */
	__u32 pg_pool;		  /* PG::pg_id.pgid.m_pool (u64), from log_op_stats' this */
	__u32 pg_seed;		  /* PG::pg_id.pgid.m_seed (u32) */
	__u32 msg_object;	  /* MOSDOp::hobj.oid.name (std::string) */
	__u32 reply_reqid;	  /* MOSDRepOpReply::reqid: the client op's, as OpRequest::reqid */
	__u32 msg_src;		  /* Message::header.src: u8 type, then le64 num (packed) */
	__u32 stats_slot;      /* 1 + its slot in osd_stats_slots; 0: its series are in the hash */
	__u32 bl_len;	       /* ceph::buffer::list::_len (u32) */
	__u32 ioc_priv;	       /* IOContext::priv: its owner, NULL for BlueFS's */
	__u32 txc_ioc;	       /* BlueStore::TransContext::ioc: priv + this = the IOContext */
	__u32 deferred_ioc;    /* BlueStore::DeferredBatch::ioc */
	__u32 io_done_txc_reg; /* enum cephscope_osd_saved_reg */
};

/* An op between its transaction being queued and its completion, by the client's reqid. */
struct osd_op_key {
	__u32 tgid;
	__u8 name_type;
	__u8 pad[3];
	__s64 name_num;
	__u64 tid;
};

/* Replica replies kept per op: the last OSD_REPLIES_KEPT, in a ring (a size-5 pool has 4). */
#define OSD_REPLIES_KEPT 4

/* osd_inflight's value: what the op's transaction and its replicas went through so far. */
struct osd_inflight {
	__u64 queued;		/* transaction queued (BlueStore::queue_transactions), mono ns */
	__u64 kv_committed;	/* its kv commit, mono ns; 0 until then */
	__u64 bs[OSD_BS_COUNT]; /* BlueStore stage durations, ns */
	__u32 bs_known;		/* bit i: bs[i] was measured */
	__u32 replies; /* replica commit replies seen; reply i is at i % OSD_REPLIES_KEPT */
	__u64 reply_ns[OSD_REPLIES_KEPT];  /* when the primary took each reply, mono ns */
	__s32 reply_osd[OSD_REPLIES_KEPT]; /* the replica that sent it */
};

/* One series group: an OSD's ops of one kind and class; every stage is in one value. */
struct osd_stats_key {
	__u32 target;
	__u8 kind; /* enum cephscope_osd_kind */
	__u8 op;   /* enum cephscope_osd_op */
	__u16 pad;
};

/*
 * One series' histograms, index OSD_STAGE_WHOLE the whole op; one map lookup per op folds all
 * of it. Every fold adds to each measured stage's sum and to one of its buckets: the sums and
 * the bytes sit together in front, the buckets apart, so that an op touches one cache line per
 * stage and two for all the sums, not two lines per stage (docs/performance.md, the fold).
 */
struct osd_stats {
	__u64 sum_ns[OSD_STAGE_COUNT + 1];
	__u64 bytes_in;	 /* client payload received (written) */
	__u64 bytes_out; /* payload sent back (read) */
	__u64 slots[OSD_STAGE_COUNT + 1][HIST_SLOTS];
	__u64 slow[OSD_STAGE_COUNT + 1]; /* stage: slow ops it was the longest of; whole: all */
};

#define OSD_RECORD_OBJECT 96   /* bytes of a slow op's object name kept, NUL included */
#define OSD_RECORD_REPLICAS 64 /* bytes of its "waiting for subops from <osds>" event */

/* Who made a record: the primary of a client op, or a replica of its sub-op. */
enum cephscope_osd_record {
	OSD_RECORD_OP,
	OSD_RECORD_REPLICA,
};

/*
 * One client op over the slow threshold, from its primary, or one replica sub-op over it, or
 * its series' new slowest op of the exemplar interval: the only per-op traffic to user space
 * (a ring buffer), rare by design. Times are ns; stage i is valid when bit i of known. A
 * replica's request id is its client's.
 */
struct osd_slow_record {
	__u64 time_ns; /* realtime, at the reply */
	__u64 whole_ns;
	__u64 stage_ns[OSD_STAGE_COUNT];
	__u32 known;
	__u32 tgid;
	__u32 target;
	__u8 op;	/* enum cephscope_osd_op */
	__u8 name_type; /* the client's entity type (8: client) */
	__u8 have_pg;
	__u8 kind;    /* enum cephscope_osd_record */
	__s64 client; /* client.N */
	__u64 tid;
	__u64 pool;
	__u32 pg_seed;
	__u32 object_len; /* the name's whole length; the text holds at most OSD_RECORD_OBJECT-1 */
	__u8 have_reqid;  /* the request id (client, tid) was read */
	__u8 have_inc;	  /* and its incarnation */
	__u8 slow;	  /* over the slow threshold */
	__u8 exemplar;	  /* its series' slowest op of exemplar interval INTERVAL so far */
	__s32 inc;
	char object[OSD_RECORD_OBJECT];
	char replicas[OSD_RECORD_REPLICAS];
	/*
	 * Tier 2: the replicas' commit replies, osd_inflight's ring (reply k at k %
	 * OSD_REPLIES_KEPT), each as the op's start (header read) -> the primary taking it.
	 */
	__u32 replies;
	__s32 reply_osd[OSD_REPLIES_KEPT];
	__u32 interval; /* exemplar_interval when it was sent */
	__u64 reply_after_ns[OSD_REPLIES_KEPT];
};

#define OSD_RECORDS_BYTES (256 * 1024) /* about 800 records in flight to the daemon */

/* Longest event list scanned per op: Ceph preallocates 20, a size-3 write has 12. */
#define OSD_EVENTS_MAX 24

/*
 * Largest OpRequest window copied in one read (16.2.15: 280 bytes, events @64 .. dequeued @336;
 * 20.2.4: 328 bytes, to dequeued @384). The scratch holds OP_BUF_MASK + 1 bytes and more.
 */
#define OSD_OP_WINDOW_MAX 384
/* Largest Message window (16.2.15: 178 bytes, header.data_len @54 .. recv_complete_stamp @224). */
#define OSD_MSG_WINDOW_MAX 256
#define OSD_EVENT_SIZE 40

#define OSD_LAYOUTS_MAX 1024
#define OSD_INFLIGHT_MAX 65536
#define OSD_TXC_MAX 16384	  /* BlueStore transactions between io done and kv commit */
#define OSD_THREADS_MAX 4096	  /* OSD shard threads queuing a transaction */
#define OSD_STATS_MAX 4096	  /* {OSD, kind, op}: 6 per OSD */
#define OSD_LAST_REPLICA_MAX 4096 /* {OSD, the replica that answered its writes last} */
#define OSD_BS_BYTES_MAX 4096	  /* {OSD, kind}: 5 per OSD */

/* The bluestore layer's counters: per OSD and kind, bytes and device writes. */
struct osd_bs_key {
	__u32 target;
	__u32 kind; /* enum cephscope_bs_kind */
};

struct osd_bs_bytes {
	__u64 bytes;
	__u64 writes;
};

/*
 * Like the op series: the counters of a process with a stats slot are in a per-CPU array,
 * OSD_BS_KIND_COUNT per slot, found by index (a hash lookup was about half a hit's run time);
 * those of any other process in the osd_bs_bytes hash.
 */
static inline __u32 osd_bs_slot_index(__u32 stats_slot, __u32 kind)
{
	return (stats_slot - 1) * OSD_BS_KIND_COUNT + kind;
}

/* Tier 2: how many of an OSD's replicated client writes waited last for REPLICA. */
struct osd_last_replica_key {
	__u32 target;
	__s32 replica; /* OSD id */
};

/*
 * The series of the first OSD_STATS_SLOTS OSD processes sit in a per-CPU array, OSD_SLOT_SERIES
 * per process (client ops by op, then replicated writes), found by index where the hash
 * lookup cost about 250 ns per hit in a loaded ceph-osd (docs/collectors/osd.md); the series
 * of any other process are in the osd_stats hash.
 */
#define OSD_STATS_SLOTS 32
#define OSD_SLOT_SERIES (OSD_OP_COUNT + 1)

/* A series' index in a slot: a client op by its op, a replicated write after them. */
static inline __u32 osd_slot_series(__u32 kind, __u32 op)
{
	return kind == OSD_KIND_SUBOP ? (__u32)OSD_OP_COUNT : op;
}

#endif
