/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Older kernels' layouts, chosen at load time with bpf_core_field_exists. */
#ifndef CEPHSCOPE_CORE_FIXES_BPF_H
#define CEPHSCOPE_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* Linux 5.17 (f3fa33acca9f) moved the disk from request::rq_disk to request_queue::disk. */
struct request___with_rq_disk {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* Linux 5.12 (309dca309fc3) replaced bio::bi_disk + bi_partno with bio::bi_bdev. */
struct bio___with_bi_disk {
	struct gendisk *bi_disk;
	__u8 bi_partno;
} __attribute__((preserve_access_index));

/*
 * The time blk-cgroup stamps on a bio as it is queued, just before block_bio_queue fires, on
 * 5.10 to 6.12: bio::bi_issue, the time in its low 51 bits and the size above; a bio's init
 * zeroes it. Not there without CONFIG_BLK_CGROUP, nor on 6.18, whose bio::issue_time_ns is
 * still zero at that tracepoint.
 */
struct bio_issue___old {
	__u64 value;
} __attribute__((preserve_access_index));

struct bio___with_bi_issue {
	struct bio_issue___old bi_issue;
} __attribute__((preserve_access_index));

#define CEPHSCOPE_MINORBITS 20

static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	__u32 major = BPF_CORE_READ(disk, major);
	__u32 minor = BPF_CORE_READ(disk, first_minor);

	return (major << CEPHSCOPE_MINORBITS) | minor;
}

/*
 * The helpers below take typed kernel pointers (tp_btf and fentry arguments) and read them
 * with plain loads, which cost a fraction of a probe-read helper call each.
 */
static __always_inline __u32 typed_disk_dev(struct gendisk *disk)
{
	return ((__u32)disk->major << CEPHSCOPE_MINORBITS) | (__u32)disk->first_minor;
}

static __always_inline __u32 request_dev(struct request *rq)
{
	struct request___with_rq_disk *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return typed_disk_dev(old->rq_disk);
	return typed_disk_dev(rq->q->disk);
}

/* bio_issue's time bits; ages of a bio's stamps are taken modulo their width (block.bpf.c). */
#define BIO_TIME_MASK ((1ULL << 51) - 1)

/*
 * When BIO was queued, ktime ns modulo 2^51: the kernel's stamp where it keeps one, else the
 * clock (the clock read is most of what block_bio_queue's program costs).
 */
static __always_inline __u64 bio_queued_ns(struct bio *bio)
{
	struct bio___with_bi_issue *old = (void *)bio;
	__u64 stamp = 0;

	if (bpf_core_field_exists(old->bi_issue))
		stamp = old->bi_issue.value & BIO_TIME_MASK;
	return stamp ? stamp : bpf_ktime_get_ns();
}

/* The whole disk a bio was submitted to (a partition's bio: the disk it is part of). */
static __always_inline __u32 bio_disk_dev(struct bio *bio)
{
	struct bio___with_bi_disk *old = (void *)bio;

	if (bpf_core_field_exists(old->bi_disk))
		return typed_disk_dev(old->bi_disk);
	return typed_disk_dev(bio->bi_bdev->bd_disk);
}

#endif
