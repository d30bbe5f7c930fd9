/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between rados.bpf.c and daemon/collectors/rados/rados_collector.cpp. */
#ifndef CEPHSCOPE_RADOS_H
#define CEPHSCOPE_RADOS_H

#include "cephscope.h"
#include "marker_args.h"

#define RADOS_PAGE 4096		 /* a probe's address modulo this is its file offset's */
#define RADOS_SENT_BUCKETS 16384 /* in-flight table: 4 ops per bucket, all clients together */
#define RADOS_STATS_MAX 4096	 /* (client, pool, op) series in the kernel */
#define RADOS_REPLY_SLOTS 4096	 /* one reply being handled per thread slot */
#define RADOS_OPS_READ 4	 /* OSDOps of one Op read for its bytes (most carry 1 or 2) */
#define RADOS_OBJECT_READ 48	 /* bytes of an object name read for its rbd image id */
#define RADOS_RECORDS_BYTES (256 * 1024) /* slow client-op records in flight to the daemon */
#define RADOS_RECORD_OBJECT 96		 /* bytes of a slow op's object name kept, NUL included */
#define RADOS_IMAGE_ID_LEN 32	  /* an rbd image id kept, NUL included (ids are ~12-16 hex) */
#define RADOS_MARKER_SITES 256	  /* Objecter marker sites of all probed builds */
#define RADOS_MARKER_OPS_READ 128 /* bytes of a send marker's ops string read for class, bytes */

/* The `op` label: from the Op's target flags (CEPH_OSD_FLAG_READ / _WRITE). */
enum cephscope_rados_op {
	RADOS_OP_READ,
	RADOS_OP_WRITE,
	RADOS_OP_OTHER,
	RADOS_OP_COUNT,
};

/* Ceph's op flags and op codes (include/rados.h), as the wire protocol fixes them. */
#define CEPH_OSD_FLAG_READ 0x0010
#define CEPH_OSD_FLAG_WRITE 0x0020
#define CEPH_OSD_OP_READ 0x1201
#define CEPH_OSD_OP_SPARSE_READ 0x1205
#define CEPH_OSD_OP_SYNC_READ 0x120b
#define CEPH_OSD_OP_WRITE 0x2201
#define CEPH_OSD_OP_WRITEFULL 0x2202
#define CEPH_OSD_OP_APPEND 0x2206

/* The `op` label of a request's target flags: the librados client's and the kernel's alike. */
static inline __u32 rados_op_class(__u32 flags)
{
	__u32 rd = flags & CEPH_OSD_FLAG_READ, wr = flags & CEPH_OSD_FLAG_WRITE;

	if (rd && !wr)
		return RADOS_OP_READ;
	if (wr && !rd)
		return RADOS_OP_WRITE;
	return RADOS_OP_OTHER; /* read-modify-write and the rest, as the OSD's op_rw */
}

/* Whether an op's extent length is payload: the reads and writes of data. */
static inline __u32 rados_op_moves_bytes(__u16 code)
{
	switch (code) {
	case CEPH_OSD_OP_READ:
	case CEPH_OSD_OP_SPARSE_READ:
	case CEPH_OSD_OP_SYNC_READ:
	case CEPH_OSD_OP_WRITE:
	case CEPH_OSD_OP_WRITEFULL:
	case CEPH_OSD_OP_APPEND:
		return 1;
	default:
		return 0;
	}
}

/* The `class` label of cephscope_client_op_errors_total: a fixed set of errno classes. */
enum cephscope_rados_error {
	RADOS_ERR_NOT_FOUND,   /* ENOENT, ENODATA */
	RADOS_ERR_EXISTS,      /* EEXIST */
	RADOS_ERR_PERMISSION,  /* EPERM, EACCES */
	RADOS_ERR_NO_SPACE,    /* ENOSPC, EDQUOT */
	RADOS_ERR_TIMEOUT,     /* ETIMEDOUT: the client's rados_osd_op_timeout */
	RADOS_ERR_CANCELLED,   /* ECANCELED */
	RADOS_ERR_BLOCKLISTED, /* ESHUTDOWN: the client was blocklisted */
	RADOS_ERR_OTHER,
	RADOS_ERR_COUNT,
};

/* The class of a negative errno; the C++ side names the same classes (shared, so it agrees). */
static inline __u32 rados_error_class(__s32 err)
{
	switch (-err) {
	case 2:	 /* ENOENT */
	case 61: /* ENODATA */
		return RADOS_ERR_NOT_FOUND;
	case 17: /* EEXIST */
		return RADOS_ERR_EXISTS;
	case 1:	 /* EPERM */
	case 13: /* EACCES */
		return RADOS_ERR_PERMISSION;
	case 28:  /* ENOSPC */
	case 122: /* EDQUOT */
		return RADOS_ERR_NO_SPACE;
	case 110: /* ETIMEDOUT */
		return RADOS_ERR_TIMEOUT;
	case 125: /* ECANCELED */
		return RADOS_ERR_CANCELLED;
	case 108: /* ESHUTDOWN: EBLOCKLISTED */
		return RADOS_ERR_BLOCKLISTED;
	default:
		return RADOS_ERR_OTHER;
	}
}

/*
 * The programs, in the order of the daemon's probe table. A hit finds its library build's
 * layout at rados_layouts[probe * RADOS_PAGE + address % RADOS_PAGE]: a library file is mapped
 * at a page boundary, so the address of a probe modulo the page is its file offset's in every
 * process, and the same function of two builds is told apart by it (the daemon refuses a
 * second build whose offset collides with another's).
 */
enum cephscope_rados_probe {
	RADOS_PROBE_SEND,
	RADOS_PROBE_REPLY,
	RADOS_PROBE_FINISH,
	RADOS_PROBES,
};

/*
 * Ceph's proposed Objecter markers (docs/collectors/rados.md), where a build carries them:
 * they replace the send and finish functions, and need no debug info. A hit finds its site's
 * argument specs at rados_marker_sites[marker * RADOS_PAGE + address % RADOS_PAGE].
 */
enum cephscope_rados_marker {
	RADOS_MARKER_SEND,   /* objecter_send_op: tid, object, ops */
	RADOS_MARKER_FINISH, /* objecter_finish_op: tid */
	RADOS_MARKERS,
};

/* An in-flight key of a marker build: its tid, beside the Op addresses of the others. */
#define RADOS_MARKER_KEY(tid) ((tid) | (1ULL << 63))

/* The pool of an op seen through markers: they do not carry it. */
#define RADOS_POOL_UNKNOWN (-1LL)

/* Where a marker site's arguments are (kind USDT_KEY_THREAD: the marker lacks it). */
struct rados_marker_site {
	struct usdt_key_spec tid;
	struct usdt_key_spec ops; /* the send's "name off~len;..." string of the op's OSDOps */
};

/* Members found in the client library's build (rados_layout.have). */
#define RADOS_HAVE_OP (1u << 0)	    /* Op::attempts, target pool and flags: the op is seen */
#define RADOS_HAVE_BYTES (1u << 1)  /* Op::ops and OSDOp's code and extent length */
#define RADOS_HAVE_RESULT (1u << 2) /* MOSDOpReply::result: errors the OSD returned */
#define RADOS_HAVE_OBJECT (1u << 3) /* Op::target.base_oid.name: the rbd image of an op */
#define RADOS_HAVE_IDS (1u << 4)    /* Op::tid, target.osd, target.pgid: a slow op's record */
/* A slow op's request id and cluster (read only for a record): */
#define RADOS_HAVE_GID_MONC (1u << 5) /* Objecter::monc, MonClient::global_id */
#define RADOS_HAVE_GID_RC (1u << 6)   /* the same through the RadosClient holding that MonClient */
#define RADOS_HAVE_INC (1u << 7)      /* Objecter::client_inc */
#define RADOS_HAVE_FSID (1u << 8)     /* Objecter::osdmap (a pointer), OSDMap::fsid */

/* Member offsets of one client library build, from its probe profile. */
struct rados_layout {
	__u32 have;
	__u32 op_attempts;	  /* Objecter::Op::attempts (int): sends so far */
	__u32 op_pool;		  /* Op::target.base_oloc.pool (s64) */
	__u32 op_flags;		  /* Op::target.flags (int) */
	__u32 op_ops_start;	  /* Op::ops, a small_vector of OSDOp: its data pointer */
	__u32 op_ops_size;	  /* and its element count (u64) */
	__u32 osdop_size;	  /* sizeof(OSDOp) */
	__u32 osdop_code;	  /* OSDOp::op.op (le16) */
	__u32 osdop_length;	  /* OSDOp::op.extent.length (le64) */
	__u32 reply_result;	  /* MOSDOpReply::result (s32) */
	__u32 op_object;	  /* Op::target.base_oid.name (std::string: data pointer, length) */
	__u32 op_tid;		  /* Op::tid (u64) */
	__u32 op_osd;		  /* Op::target.osd (s32): the OSD it was last sent to */
	__u32 op_pg_seed;	  /* Op::target.pgid.m_seed (u32) */
	__u32 objecter_monc;	  /* Objecter::monc (MonClient *) */
	__u32 objecter_inc;	  /* Objecter::client_inc (s32) */
	__u32 objecter_osdmap;	  /* Objecter::osdmap (OSDMap *, or a unique_ptr of its size) */
	__u32 osdmap_fsid;	  /* OSDMap::fsid (16 bytes) */
	__u32 monc_global_id;	  /* MonClient::global_id (u64) */
	__u32 client_monclient;	  /* RadosClient::monclient, the MonClient the Objecter's monc is */
	__u32 client_instance_id; /* RadosClient::instance_id (u64): the global id */
	__u32 client_objecter;	  /* RadosClient::objecter: checks that monc is its MonClient */
	__u32 pad;
};

/*
 * An op between its first send and its finish; first_send_ns 0: the way is free. What the
 * finish folds is read at the first send, where the sending thread has just built the op (its
 * lines are in that CPU's cache; the finish runs on a messenger thread, often elsewhere).
 */
struct rados_sent {
	__u64 op; /* the Objecter::Op's address in the client */
	__u64 first_send_ns;
	__s64 pool;  /* Op::target.base_oloc.pool */
	__u64 bytes; /* payload of its data OSDOps */
	__u32 tgid;
	__u16 sends;   /* Op::attempts at its latest send, plus one */
	__u8 op_class; /* enum rados_op, from Op::target.flags */
	__u8 pad;
};

/*
 * Four ways: librbd's cache flushes a thousand writes at once, and with two ways about one
 * send in 2,000 of such a burst found both ways of its bucket live (64 Ki records either way).
 */
#define RADOS_SENT_WAYS 4

/* A bucket of the in-flight table: the ops whose key hashes to it. */
struct rados_sent_bucket {
	struct rados_sent way[RADOS_SENT_WAYS];
};

/* The reply a thread is handling, for the _finish_op that follows on the same thread. */
struct rados_reply {
	__u32 tid; /* thread id; 0: none pending */
	__s32 result;
};

struct rados_stats_key {
	__u32 target; /* CEPHSCOPE_UNTRACKED: a process not tracked yet, by its pid */
	__u32 op;     /* enum cephscope_rados_op */
	__s64 pool;
	/*
	 * Per-instance labels (collectors.rados.instance_labels): an op on an rbd image's data
	 * objects carries the image id; any other op its process id. Both zero otherwise. An
	 * untracked process's ops carry its pid whatever the setting: the daemon adds them to its
	 * target's series once it tracks it.
	 */
	__u32 pid;
	__u32 pad;
	char image[RADOS_IMAGE_ID_LEN];
};

struct rados_stats {
	struct hist latency; /* first send -> finish */
	__u64 bytes;	     /* extent lengths of the op's reads and writes */
	__u64 resends;	     /* sends after the first */
	__u64 errors[RADOS_ERR_COUNT];
};

/*
 * A client op over collectors.rados.slow_op_threshold, or its series' new slowest of the
 * exemplar interval, through the rados_records ring buffer.
 */
#define RADOS_REQID_GID (1u << 0)
#define RADOS_REQID_INC (1u << 1)
#define RADOS_REQID_FSID (1u << 2)

struct rados_slow_record {
	__u64 time_ns;	/* CLOCK_REALTIME at the finish */
	__u64 whole_ns; /* first send -> finish */
	__u64 tid;
	__s64 pool;
	__u32 tgid;
	__u32 target;
	__u32 op; /* enum cephscope_rados_op */
	__s32 result;
	__u32 pg_seed;
	__s32 osd; /* -1 when unknown */
	__u32 resends;
	__u32 object_len; /* the name's length, which may exceed what was kept */
	__u8 have_ids;
	__u8 have_reqid; /* RADOS_REQID_*: which of gid, inc and fsid were read */
	__u8 slow;	 /* over the slow threshold */
	__u8 exemplar;	 /* its series' slowest op of exemplar interval INTERVAL so far */
	__s32 inc;	 /* the request id's incarnation (Objecter::client_inc) */
	__u64 gid;	 /* the client's global id: its entity is client.<gid> */
	__u8 fsid[16];	 /* the cluster's, from the client's OSD map */
	char object[RADOS_RECORD_OBJECT];
	__u32 interval; /* exemplar_interval when it was sent */
	__u32 pad;
	struct rados_stats_key key; /* the op's series */
};

#endif
