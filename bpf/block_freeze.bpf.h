/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The block collector's queue freezes (included by block.bpf.c, which owns disk_dev,
 * count_lost and zero_hist): how long a disk's request queue stays frozen and which process
 * froze it. fentry where the kernel lets programs attach to functions, else kprobes; the
 * collector loads one set (kFreezePrograms, kFreezeKprobePrograms). No per-IO program runs here.
 */
#ifndef CEPHSCOPE_BLOCK_FREEZE_BPF_H
#define CEPHSCOPE_BLOCK_FREEZE_BPF_H

static const __u64 zero_count;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BLOCK_FROZEN_MAX);
	__type(key, __u64); /* struct request_queue * */
	__type(value, struct block_freeze);
} block_frozen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, BLOCK_FREEZERS_MAX);
	__type(key, struct block_freezer_key);
	__type(value, __u64);
} block_freezers SEC(".maps");

/* Frozen time (freeze start -> unfreeze) per disk. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, BLOCK_PARTITIONS_MAX);
	__type(key, __u32);
	__type(value, struct hist);
} block_frozen_time SEC(".maps");

struct request_queue___with_disk {
	struct gendisk *disk;
};

static __always_inline __u32 queue_dev(struct request_queue *q)
{
	struct request_queue___with_disk *with = (void *)q;

	if (bpf_core_field_exists(with->disk))
		return disk_dev(BPF_CORE_READ(with, disk));
	return 0;
}

/*
 * Tasks inside blk_mq_freeze_queue (pid_tgid -> queue). Where its call of
 * blk_freeze_queue_start is not inlined (6.1) that call is the same freeze; where it is (6.12,
 * in blk-mq.c), only the outer probe sees the elevator switch's freeze.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, BLOCK_FROZEN_MAX);
	__type(key, __u64);
	__type(value, __u64);
} block_freezing SEC(".maps");

static __always_inline void freeze_begin(struct request_queue *q)
{
	__u64 key = (__u64)q;
	struct block_freeze *frozen = bpf_map_lookup_elem(&block_frozen, &key);
	struct block_freeze fresh = {};
	struct block_freezer_key who = {};
	__u64 *count;

	if (frozen) {
		frozen->depth += 1;
		return;
	}
	fresh.start_ns = bpf_ktime_get_ns();
	fresh.depth = 1;
	fresh.dev = queue_dev(q);
	if (bpf_map_update_elem(&block_frozen, &key, &fresh, BPF_ANY))
		count_lost(LOST_INFLIGHT_FULL);
	who.dev = fresh.dev;
	bpf_get_current_comm(who.comm, sizeof(who.comm));
	count = lookup_or_init(&block_freezers, &who, &zero_count);
	if (count)
		*count += 1;
}

static __always_inline void on_freeze_start(struct request_queue *q)
{
	__u64 task = bpf_get_current_pid_tgid();
	__u64 *inside = bpf_map_lookup_elem(&block_freezing, &task);

	if (inside && *inside == (__u64)q) {
		bpf_map_delete_elem(&block_freezing,
				    &task); /* counted by blk_mq_freeze_queue's probe */
		return;
	}
	freeze_begin(q);
}

static __always_inline void on_freeze_queue(struct request_queue *q)
{
	__u64 task = bpf_get_current_pid_tgid();
	__u64 key = (__u64)q;

	bpf_map_update_elem(&block_freezing, &task, &key, BPF_ANY);
	freeze_begin(q);
}

static __always_inline void on_unfreeze(struct request_queue *q)
{
	__u64 key = (__u64)q;
	struct block_freeze *frozen = bpf_map_lookup_elem(&block_frozen, &key);
	struct hist *time;
	__u64 start;
	__u32 dev;

	if (!frozen)
		return;
	if (frozen->depth > 1) {
		frozen->depth -= 1;
		return;
	}
	start = frozen->start_ns;
	dev = frozen->dev;
	bpf_map_delete_elem(&block_frozen, &key);
	time = lookup_or_init(&block_frozen_time, &dev, &zero_hist);
	if (time)
		hist_add(time, bpf_ktime_get_ns() - start);
}

/*
 * Each hook as fentry (NAME) and as its kprobe twin (kp_NAME), for kernels that refuse fentry
 * but have kprobes: the collector loads one set or the other (kFreezePrograms,
 * kFreezeKprobePrograms).
 */
#define FREEZE_HOOK(name, func, handler)                                                           \
	SEC("fentry/" #func)                                                                       \
	int BPF_PROG(name, struct request_queue *q)                                                \
	{                                                                                          \
		handler(q);                                                                        \
		return 0;                                                                          \
	}                                                                                          \
	SEC("kprobe/" #func)                                                                       \
	int BPF_KPROBE(kp_##name, struct request_queue *q)                                         \
	{                                                                                          \
		handler(q);                                                                        \
		return 0;                                                                          \
	}

FREEZE_HOOK(freeze_start, blk_freeze_queue_start, on_freeze_start)
/* 6.15 on: blk_mq_freeze_queue and blk_mq_unfreeze_queue are inline wrappers of these. */
FREEZE_HOOK(freeze_queue_nomemsave, blk_mq_freeze_queue_nomemsave, on_freeze_queue)
FREEZE_HOOK(freeze_queue, blk_mq_freeze_queue, on_freeze_queue)
FREEZE_HOOK(unfreeze_nomemrestore, blk_mq_unfreeze_queue_nomemrestore, on_unfreeze)
FREEZE_HOOK(unfreeze, blk_mq_unfreeze_queue, on_unfreeze)

#endif /* CEPHSCOPE_BLOCK_FREEZE_BPF_H */
