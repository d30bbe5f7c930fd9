/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between kclient.bpf.c and daemon/collectors/kclient/kclient_collector.cpp. */
#ifndef CEPHSCOPE_KCLIENT_H
#define CEPHSCOPE_KCLIENT_H

#include "cephscope.h"
#include "rados.h"

#define KCLIENT_STATS_MAX 4096	   /* (client, device, pool, op, process) series in the kernel */
#define KCLIENT_INFLIGHT_MAX 16384 /* requests submitted and not yet done, all clients */
#define KCLIENT_MOUNTS_MAX 256	   /* CephFS clients seen (one per mount, as a rule) */
#define KCLIENT_NO_DEVICE (-1)	   /* an OSD request of no rbd device (CephFS, or rbd's own) */
#define KCLIENT_OPS_READ 3	   /* ops of one OSD request looked at for its class and bytes */

/* libceph's OSD requests, by the `op` label of the rados collector (enum cephscope_rados_op). */
struct kclient_osd_key {
	__u64 client; /* the ceph_client's global id: client.<id> */
	__s64 pool;
	__s32 device; /* rbd<N>, or KCLIENT_NO_DEVICE */
	__u32 op;     /* enum cephscope_rados_op */
	__u32 target; /* the submitting tracked process, or CEPHSCOPE_UNTRACKED */
	__u32 pad;
};

struct kclient_osd_stats {
	struct hist latency; /* libceph's own stamps: r_start_latency -> r_end_latency */
	__u64 bytes;	     /* extent lengths of the request's reads and writes */
	__u64 errors[RADOS_ERR_COUNT];
};

/* CephFS MDS requests, by CEPH_MDS_OP_* (named by the daemon). */
struct kclient_mds_key {
	__u64 client;
	__u32 op;
	__u32 target;
};

struct kclient_mds_stats {
	struct hist latency; /* r_start_latency -> r_end_latency */
	__u64 errors;	     /* requests that ended with r_err < 0 (aborted, timed out) */
};

/* A request from its submission to its completion, keyed by the request's address. */
struct kclient_submitted {
	__u64 start_ns;
	__u64 client;
	__u32 target; /* the submitting tracked process, or CEPHSCOPE_UNTRACKED */
	__s32 device; /* rbd<N> for an rbd device's data request, else KCLIENT_NO_DEVICE */
};

/* What rbd_osd_submit learnt for the ceph_osdc_start_request it calls next on this CPU. */
struct kclient_rbd_pending {
	__u64 req; /* the request's address; 0: none */
	__s32 device;
	__u32 pad;
};

/* A CephFS client: what the daemon needs to name its mount. */
struct kclient_mount {
	__u32 dev; /* the superblock's s_dev (kernel encoding: major << 20 | minor) */
	__u32 pad;
	__u8 fsid[16];
};

#endif
