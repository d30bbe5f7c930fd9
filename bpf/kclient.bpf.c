// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kclient collector: the kernel's Ceph client (libceph, rbd, ceph modules). OSD requests from
 * ceph_osdc_start_request to __complete_request, per client, rbd device (rbd_osd_submit names
 * it), pool and op; CephFS MDS requests from ceph_mdsc_submit_request to their release, per
 * client and operation.
 * Two flavours of the same hooks: fentry (cheapest) and kprobe; the daemon loads one. The
 * types are the modules' own (their BTF): declared here with only the members read.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "kclient.h"
#include "maps.bpf.h"
#include "targets.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct ceph_auth_client___kc {
	__u64 global_id;
} __attribute__((preserve_access_index));

struct ceph_mon_client___kc {
	struct ceph_auth_client___kc *auth;
} __attribute__((preserve_access_index));

struct ceph_fsid___kc {
	unsigned char fsid[16];
} __attribute__((preserve_access_index));

struct ceph_client___kc {
	struct ceph_fsid___kc fsid;
	struct ceph_mon_client___kc monc;
} __attribute__((preserve_access_index));

struct ceph_osd_client___kc {
	struct ceph_client___kc *client;
} __attribute__((preserve_access_index));

struct ceph_object_locator___kc {
	__s64 pool;
} __attribute__((preserve_access_index));

struct ceph_osd_request_target___kc {
	struct ceph_object_locator___kc base_oloc;
	unsigned int flags; /* CEPH_OSD_FLAG_* */
} __attribute__((preserve_access_index));

struct ceph_osd_req_op___kc {
	__u16 op;
	union {
		struct {
			__u64 offset;
			__u64 length;
		} extent;
	};
} __attribute__((preserve_access_index));

struct ceph_osd_request___kc {
	struct ceph_osd_client___kc *r_osdc;
	struct ceph_osd_request_target___kc r_t;
	unsigned int r_num_ops;
	int r_result;
	void *r_priv;
	struct ceph_osd_req_op___kc r_ops[];
} __attribute__((preserve_access_index));

struct rbd_device___kc {
	int dev_id;
} __attribute__((preserve_access_index));

struct rbd_img_request___kc {
	struct rbd_device___kc *rbd_dev;
} __attribute__((preserve_access_index));

struct rbd_obj_request___kc {
	struct rbd_img_request___kc *img_request;
} __attribute__((preserve_access_index));

struct ceph_fs_client___kc {
	struct super_block *sb;
	struct ceph_client___kc *client;
} __attribute__((preserve_access_index));

struct ceph_mds_client___kc {
	struct ceph_fs_client___kc *fsc;
} __attribute__((preserve_access_index));

struct ceph_mds_request___kc {
	struct ceph_mds_client___kc *r_mdsc;
	struct kref r_kref;
	int r_op;
	int r_err;
	__s64 r_start_latency; /* ktime_t: set at submission */
	__s64 r_end_latency;   /* ktime_t: set at completion (reply, abort) */
} __attribute__((preserve_access_index));

/* When the probes went in (CLOCK_MONOTONIC): an MDS request released with no submission seen
 * is counted lost only when libceph stamped its submission after this. Set by the daemon. */
__u64 attached_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, KCLIENT_INFLIGHT_MAX);
	__type(key, __u64); /* the request's address */
	__type(value, struct kclient_submitted);
} kclient_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kclient_rbd_pending);
} kclient_rbd_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, KCLIENT_STATS_MAX);
	__type(key, struct kclient_osd_key);
	__type(value, struct kclient_osd_stats);
} kclient_osd_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, KCLIENT_STATS_MAX);
	__type(key, struct kclient_mds_key);
	__type(value, struct kclient_mds_stats);
} kclient_mds_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KCLIENT_MOUNTS_MAX);
	__type(key, __u64); /* the CephFS client's global id */
	__type(value, struct kclient_mount);
} kclient_mounts SEC(".maps");

static const struct kclient_osd_stats zero_osd_stats;
static const struct kclient_mds_stats zero_mds_stats;

static __always_inline __u64 client_id(struct ceph_client___kc *client)
{
	return BPF_CORE_READ(client, monc.auth, global_id);
}

static __always_inline void submitted(void *req, __u64 client, __s32 device)
{
	struct kclient_submitted s = {
	    .start_ns = bpf_ktime_get_ns(),
	    .client = client,
	    .target = current_target(),
	    .device = device,
	};
	__u64 key = (__u64)req;

	if (bpf_map_update_elem(&kclient_inflight, &key, &s, BPF_ANY) != 0)
		count_lost(LOST_INFLIGHT_FULL);
}

/*
 * rbd's data requests pass here on their way to ceph_osdc_start_request, which rbd_osd_submit
 * calls next with nothing in between that sleeps: the device waits in a per-CPU slot (an
 * inlined array load for ceph_osdc_start_request, where a hash lookup would cost every
 * request). A slot whose request is not the one submitted is ignored: that request counts
 * without a device.
 */
static __always_inline int rbd_submitted(struct ceph_osd_request___kc *req)
{
	__u32 zero = 0;
	struct kclient_rbd_pending *p = bpf_map_lookup_elem(&kclient_rbd_pending, &zero);
	struct rbd_obj_request___kc *obj = BPF_CORE_READ(req, r_priv);

	if (!p)
		return 0;
	p->device = BPF_CORE_READ(obj, img_request, rbd_dev, dev_id);
	p->req = (__u64)req;
	return 0;
}

static __always_inline int osd_submitted(struct ceph_osd_client___kc *osdc, void *req)
{
	__u32 zero = 0;
	struct kclient_rbd_pending *p = bpf_map_lookup_elem(&kclient_rbd_pending, &zero);
	__s32 device = KCLIENT_NO_DEVICE;

	if (p && p->req == (__u64)req) {
		device = p->device;
		p->req = 0;
	}
	submitted(req, client_id(BPF_CORE_READ(osdc, client)), device);
	return 0;
}

/* The extent bytes of the request's reads and writes (its first KCLIENT_OPS_READ ops). */
static __always_inline __u64 osd_bytes(struct ceph_osd_request___kc *req)
{
	__u32 n = BPF_CORE_READ(req, r_num_ops);
	void *ops = (void *)req + bpf_core_field_offset(struct ceph_osd_request___kc, r_ops);
	__u32 size = bpf_core_type_size(struct ceph_osd_req_op___kc);
	__u64 bytes = 0;

#pragma unroll
	for (int i = 0; i < KCLIENT_OPS_READ; i++) {
		struct ceph_osd_req_op___kc *op = ops + i * size;

		if (i >= n)
			break;
		if (rados_op_moves_bytes(BPF_CORE_READ(op, op)))
			bytes += BPF_CORE_READ(op, extent.length);
	}
	return bytes;
}

/* An MDS request released with no submission seen: lost when libceph submitted it after the
 * attach (an LRU eviction of its record). */
static __always_inline void no_start(__s64 submitted_at)
{
	if (attached_ns != 0 && submitted_at > (__s64)attached_ns)
		count_lost(LOST_NO_START);
}

static __always_inline int osd_completed(struct ceph_osd_request___kc *req)
{
	__u64 key = (__u64)req;
	struct kclient_submitted *s = bpf_map_lookup_elem(&kclient_inflight, &key);

	/* none: submitted before the attach, or by libceph itself (watch, notify and their
	 * pings go to submit_request directly): not the client's requests */
	if (!s)
		return 0;
	__u64 delta = bpf_ktime_get_ns() - s->start_ns;
	struct kclient_osd_key k = {
	    .client = s->client,
	    .pool = BPF_CORE_READ(req, r_t.base_oloc.pool),
	    .device = s->device,
	    .op = rados_op_class(BPF_CORE_READ(req, r_t.flags)),
	    .target = s->target,
	};
	int result = BPF_CORE_READ(req, r_result);

	bpf_map_delete_elem(&kclient_inflight, &key);
	struct kclient_osd_stats *stats = lookup_or_init(&kclient_osd_stats, &k, &zero_osd_stats);

	if (!stats)
		return 0;
	hist_add(&stats->latency, delta);
	if (result < 0)
		stats->errors[rados_error_class(result) % RADOS_ERR_COUNT] += 1;
	else if (k.op != RADOS_OP_OTHER)
		stats->bytes += osd_bytes(req);
	return 0;
}

static __always_inline int mds_submitted(struct ceph_mds_client___kc *mdsc, void *req)
{
	struct ceph_fs_client___kc *fsc = BPF_CORE_READ(mdsc, fsc);
	struct ceph_client___kc *client = BPF_CORE_READ(fsc, client);
	__u64 id = client_id(client);

	submitted(req, id, KCLIENT_NO_DEVICE);
	if (!bpf_map_lookup_elem(&kclient_mounts, &id)) {
		struct kclient_mount m = {};
		struct super_block *sb = BPF_CORE_READ(fsc, sb);

		m.dev = BPF_CORE_READ(sb, s_dev);
		BPF_CORE_READ_INTO(&m.fsid, client, fsid.fsid);
		bpf_map_update_elem(&kclient_mounts, &id, &m, BPF_NOEXIST);
	}
	return 0;
}

/* The request's last reference went: its stamps are libceph's own (submission, completion). */
static __always_inline int mds_released(void *kref)
{
	struct ceph_mds_request___kc *req =
	    kref - bpf_core_field_offset(struct ceph_mds_request___kc, r_kref);
	__u64 key = (__u64)req;
	struct kclient_submitted *s = bpf_map_lookup_elem(&kclient_inflight, &key);
	__s64 start = BPF_CORE_READ(req, r_start_latency);
	__s64 end = BPF_CORE_READ(req, r_end_latency);

	if (!s) {
		no_start(start);
		return 0;
	}
	struct kclient_mds_key k = {
	    .client = s->client,
	    .op = BPF_CORE_READ(req, r_op),
	    .target = s->target,
	};
	int err = BPF_CORE_READ(req, r_err);

	bpf_map_delete_elem(&kclient_inflight, &key);
	if (end <= start || start == 0)
		return 0; /* created, never sent */
	struct kclient_mds_stats *stats = lookup_or_init(&kclient_mds_stats, &k, &zero_mds_stats);

	if (!stats)
		return 0;
	hist_add(&stats->latency, end - start);
	if (err < 0)
		stats->errors += 1;
	return 0;
}

SEC("fentry/ceph_osdc_start_request")
int BPF_PROG(fentry_ceph_osdc_start_request, struct ceph_osd_client___kc *osdc, void *req)
{
	return osd_submitted(osdc, req);
}
SEC("fentry/__complete_request")
int BPF_PROG(fentry___complete_request, struct ceph_osd_request___kc *req)
{
	return osd_completed(req);
}
SEC("fentry/rbd_osd_submit")
int BPF_PROG(fentry_rbd_osd_submit, struct ceph_osd_request___kc *req)
{
	return rbd_submitted(req);
}
SEC("fentry/ceph_mdsc_submit_request")
int BPF_PROG(fentry_ceph_mdsc_submit_request, struct ceph_mds_client___kc *mdsc, void *dir,
	     void *req)
{
	return mds_submitted(mdsc, req);
}
SEC("fentry/ceph_mdsc_release_request")
int BPF_PROG(fentry_ceph_mdsc_release_request, void *kref)
{
	return mds_released(kref);
}

SEC("kprobe/ceph_osdc_start_request")
int BPF_KPROBE(kprobe_ceph_osdc_start_request, struct ceph_osd_client___kc *osdc, void *req)
{
	return osd_submitted(osdc, req);
}
SEC("kprobe/__complete_request")
int BPF_KPROBE(kprobe___complete_request, struct ceph_osd_request___kc *req)
{
	return osd_completed(req);
}
SEC("kprobe/rbd_osd_submit")
int BPF_KPROBE(kprobe_rbd_osd_submit, struct ceph_osd_request___kc *req)
{
	return rbd_submitted(req);
}
SEC("kprobe/ceph_mdsc_submit_request")
int BPF_KPROBE(kprobe_ceph_mdsc_submit_request, struct ceph_mds_client___kc *mdsc, void *dir,
	       void *req)
{
	return mds_submitted(mdsc, req);
}
SEC("kprobe/ceph_mdsc_release_request")
int BPF_KPROBE(kprobe_ceph_mdsc_release_request, void *kref)
{
	return mds_released(kref);
}
