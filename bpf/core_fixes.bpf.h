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

#define CEPHSCOPE_MINORBITS 20

static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	__u32 major = BPF_CORE_READ(disk, major);
	__u32 minor = BPF_CORE_READ(disk, first_minor);

	return (major << CEPHSCOPE_MINORBITS) | minor;
}

static __always_inline __u32 request_dev(struct request *rq)
{
	struct request___with_rq_disk *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return disk_dev(BPF_CORE_READ(old, rq_disk));
	return disk_dev(BPF_CORE_READ(rq, q, disk));
}

/* The device a bio was submitted to; may be a partition, mapped to its disk by the caller. */
static __always_inline __u32 bio_dev(struct bio *bio)
{
	struct bio___with_bi_disk *old = (void *)bio;

	if (bpf_core_field_exists(old->bi_disk))
		return disk_dev(BPF_CORE_READ(old, bi_disk)) + BPF_CORE_READ(old, bi_partno);
	return BPF_CORE_READ(bio, bi_bdev, bd_dev);
}

#endif
