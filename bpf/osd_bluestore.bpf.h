/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The bluestore layer of osd.bpf.c (docs/collectors/osd.md#the-bluestore-layer): every write
 * BlueStore and BlueFS hand their block device, at the one function all of them go through,
 * KernelDevice::aio_write (and KernelDevice::write, BlueFS's rare synchronous writes). One hit
 * per device write, two reads: the bufferlist's length and the IOContext's owner, which tells
 * a transaction's data (the IOContext inside a TransContext), deferred writes (inside a
 * DeferredBatch) and BlueFS (an IOContext of its own, owner NULL); BlueFS's writes carry
 * RocksDB's write-life hint, which sets its WAL apart. Members come from the probe set
 * bluestore-io, a profile of its own (daemon/collectors/osd/osd_bluestore.cpp). Included by
 * osd.bpf.c after its shared helpers.
 */
#ifndef CEPHSCOPE_OSD_BLUESTORE_BPF_H
#define CEPHSCOPE_OSD_BLUESTORE_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, OSD_BS_BYTES_MAX);
	__type(key, struct osd_bs_key);
	__type(value, struct osd_bs_bytes);
} osd_bs_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OSD_STATS_SLOTS *OSD_BS_KIND_COUNT);
	__type(key, __u32);
	__type(value, struct osd_bs_bytes);
} osd_bs_slots SEC(".maps");

static const struct osd_bs_bytes zero_bs_bytes;

/* The counters of KEY's process: in its stats slot (STATS_SLOT = 1 + the slot), else the hash. */
static __always_inline struct osd_bs_bytes *bs_counters(__u32 stats_slot,
							const struct osd_bs_key *key)
{
	if (stats_slot - 1 < OSD_STATS_SLOTS && key->kind < OSD_BS_KIND_COUNT) {
		__u32 i = osd_bs_slot_index(stats_slot, key->kind);

		return bpf_map_lookup_elem(&osd_bs_slots, &i);
	}
	return lookup_or_init(&osd_bs_bytes, key, &zero_bs_bytes);
}

/* The write's kind from its IOContext: whose member it is, or BlueFS's (owner NULL). */
static __always_inline __u32 bs_kind(const struct osd_layout *l, const void *ioc, __u64 hint)
{
	__u64 owner;

	if (!ioc || bpf_probe_read_user(&owner, sizeof(owner), ioc + l->ioc_priv))
		return OSD_BS_OTHER;
	if (!owner)
		return hint == OSD_BS_WAL_HINT ? OSD_BS_WAL : OSD_BS_BLUEFS;
	if ((__u64)ioc - owner == l->txc_ioc)
		return OSD_BS_DATA;
	if ((__u64)ioc - owner == l->deferred_ioc)
		return OSD_BS_DEFERRED;
	return OSD_BS_OTHER;
}

static __always_inline int bs_count(const void *bl, const void *ioc, __u64 hint, int sync)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct osd_layout *l = osd_layout_of(tgid);
	struct osd_bs_key key = {};
	struct osd_bs_bytes *v;
	__u32 len = 0;

	if (!l || l->target == CEPHSCOPE_UNTRACKED || !(l->have & OSD_HAVE_BS_IO) ||
	    bench_cut == CUT_AFTER_LOOKUPS)
		return 0;
	if (!bl || bpf_probe_read_user(&len, sizeof(len), bl + l->bl_len))
		return 0;
	key.target = l->target;
	key.kind = sync ? OSD_BS_BLUEFS : bs_kind(l, ioc, hint);
	if (bench_cut == CUT_AFTER_READS) /* benchmarks: all but finding the counters */
		return 0;
	v = bs_counters(l->stats_slot, &key);
	if (!v)
		return 0;
	v->bytes += len;
	v->writes += 1;
	return 0;
}

/*
 * B1: KernelDevice::aio_write(u64 off, bufferlist &bl, IOContext *ioc, bool buffered,
 * int write_hint): every queued device write (synchronous ones too, when aio is off).
 */
SEC("uprobe")
int osd_bs_aio_write(struct pt_regs *ctx)
{
	return bs_count((const void *)PT_REGS_PARM3(ctx), (const void *)PT_REGS_PARM4(ctx),
			(__u32)ctx->r9, 0);
}

/* B2: KernelDevice::write(u64 off, bufferlist &bl, bool buffered, int write_hint). */
SEC("uprobe")
int osd_bs_write(struct pt_regs *ctx)
{
	return bs_count((const void *)PT_REGS_PARM3(ctx), 0, 0, 1);
}

#endif
