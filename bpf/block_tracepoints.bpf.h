/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The block collector's classic tracepoint flavour (included by block.bpf.c, which owns the
 * in-flight tables and the on_* handlers both flavours share): requests keyed by device and
 * start sector, for kernels without tp_btf, or where collectors.block.hook asks for it.
 */
#ifndef CEPHSCOPE_BLOCK_TRACEPOINTS_BPF_H
#define CEPHSCOPE_BLOCK_TRACEPOINTS_BPF_H

/* rwbs as blk_fill_rwbs() writes it: an optional 'F' (preflush) before the op letter. */
static __always_inline __u32 op_from_rwbs(const char *rwbs)
{
	char c = rwbs[0];

	if (c == 'F' && rwbs[1] != '\0' && rwbs[1] != 'F')
		c = rwbs[1];
	switch (c) {
	case 'R':
		return BLOCK_OP_READ;
	case 'W':
		return BLOCK_OP_WRITE;
	case 'F':
		return BLOCK_OP_FLUSH;
	case 'D':
		return BLOCK_OP_DISCARD;
	default:
		return BLOCK_OP_OTHER;
	}
}

static __always_inline void tp_rq_start(struct trace_event_raw_block_rq *ctx, bool issue)
{
	char rwbs[4];
	__u64 sector = BPF_CORE_READ(ctx, sector);
	struct block_rq_key key = {.id = sector, .dev = BPF_CORE_READ(ctx, dev)};

	bpf_probe_read_kernel(rwbs, sizeof(rwbs), ctx->rwbs);
	on_rq_start(&key, sector, op_from_rwbs(rwbs), BPF_CORE_READ(ctx, bytes), issue);
}

/*
 * The context types of block_bio_queue and block_rq_complete were renamed in 5.11 and
 * 5.15 (trace_event_raw_block_bio_queue, trace_event_raw_block_rq_with_error before), so
 * CO-RE finds no type on older kernels. Their leading fields never moved: every version's
 * tracepoint format has dev at 8, sector at 16, nr_sector at 24 and error at 28; and
 * block_rq_requeue's (trace_event_raw_block_rq_requeue) has dev and sector there too.
 */
struct block_tp_prefix {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
	__u32 nr_sector;
	int error; /* block_rq_complete only */
};

/*
 * block_bio_queue, block_getrq and the bio merges share one layout on every version (the
 * block_bio class; block_get_rq and block_bio_merge before 5.11): rwbs at 28 after dev,
 * sector and nr_sector. block_split has new_sector at 24 instead.
 */
struct block_tp_bio {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
	__u32 nr_sector;
	char rwbs[8];
};

struct block_tp_split {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
	__u64 new_sector;
};

SEC("tracepoint/block/block_bio_queue")
int tp_bio_queue(struct block_tp_bio *ctx)
{
	on_bio_queue(whole_disk(ctx->dev), ctx->sector, op_from_rwbs(ctx->rwbs),
		     bpf_ktime_get_ns());
	return 0;
}

SEC("tracepoint/block/block_getrq")
int tp_getrq(struct block_tp_bio *ctx)
{
	on_getrq(whole_disk(ctx->dev), ctx->sector);
	return 0;
}

SEC("tracepoint/block/block_bio_backmerge")
int tp_bio_backmerge(struct block_tp_bio *ctx)
{
	on_bio_merge(ctx->dev, ctx->sector);
	return 0;
}

SEC("tracepoint/block/block_bio_frontmerge")
int tp_bio_frontmerge(struct block_tp_bio *ctx)
{
	on_bio_merge(ctx->dev, ctx->sector);
	return 0;
}

SEC("tracepoint/block/block_split")
int tp_split(struct block_tp_split *ctx)
{
	on_bio_split(ctx->dev, ctx->sector, ctx->new_sector);
	return 0;
}

/* block_bio_remap: old_dev and old_sector follow nr_sector, rwbs after them. */
struct block_tp_remap {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
	__u32 nr_sector;
	__u32 old_dev;
	__u64 old_sector;
	char rwbs[8];
};

SEC("tracepoint/block/block_bio_remap")
int tp_bio_remap(struct block_tp_remap *ctx)
{
	on_bio_remap(ctx->dev, ctx->sector, ctx->old_dev, ctx->old_sector, op_from_rwbs(ctx->rwbs));
	return 0;
}

SEC("tracepoint/block/block_rq_insert")
int tp_rq_insert(struct trace_event_raw_block_rq *ctx)
{
	tp_rq_start(ctx, false);
	return 0;
}

SEC("tracepoint/block/block_rq_issue")
int tp_rq_issue(struct trace_event_raw_block_rq *ctx)
{
	tp_rq_start(ctx, true);
	return 0;
}

SEC("tracepoint/block/block_rq_requeue")
int tp_rq_requeue(struct block_tp_prefix *ctx)
{
	struct block_rq_key key = {.id = ctx->sector, .dev = ctx->dev};

	on_rq_requeue(&key);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int tp_rq_complete(struct block_tp_prefix *ctx)
{
	struct block_rq_key key = {.id = ctx->sector, .dev = ctx->dev};

	on_rq_complete(&key, ctx->error, ctx->nr_sector != 0, false);
	return 0;
}

#endif
