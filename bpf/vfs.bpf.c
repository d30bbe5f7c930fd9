// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * vfs collector: latency, bytes and errors of vfs_read/write/readv/writev/fsync_range per
 * tracked process. Two flavours of the same hooks: fentry/fexit (cheapest) and
 * kprobe/kretprobe; the daemon probes which one loads and attaches, and disables the other.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "vfs.h"
#include "op_latency.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OP_INFLIGHT_SLOTS);
	__type(key, __u32);
	__type(value, struct op_start);
} vfs_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, VFS_STATS_MAX);
	__type(key, struct target_op_key);
	__type(value, struct op_stats);
} vfs_stats SEC(".maps");

OP_SERIES_MAPS(vfs, VFS_OP_COUNT);

#define BYTES_OPS ((1u << VFS_READ) | (1u << VFS_WRITE) | (1u << VFS_READV) | (1u << VFS_WRITEV))

static __always_inline int on_entry(__u32 op)
{
	return op_begin(&vfs_inflight, op);
}

static __always_inline int on_return(long ret)
{
	const struct op_maps maps = {.inflight = &vfs_inflight,
				     .stats = &vfs_stats,
				     .owner = &vfs_series_owner,
				     .series = &vfs_series,
				     .ops = VFS_OP_COUNT,
				     .bytes_ops = BYTES_OPS};

	return op_finish(&maps, ret);
}

/* fentry/fexit: fexit sees the arguments and the return value. */
SEC("fentry/vfs_read")
int BPF_PROG(fentry_vfs_read)
{
	return on_entry(VFS_READ);
}
SEC("fexit/vfs_read")
int BPF_PROG(fexit_vfs_read, struct file *f, char *buf, size_t n, loff_t *pos, ssize_t ret)
{
	return on_return(ret);
}
SEC("fentry/vfs_write")
int BPF_PROG(fentry_vfs_write)
{
	return on_entry(VFS_WRITE);
}
SEC("fexit/vfs_write")
int BPF_PROG(fexit_vfs_write, struct file *f, const char *buf, size_t n, loff_t *pos, ssize_t ret)
{
	return on_return(ret);
}
SEC("fentry/vfs_readv")
int BPF_PROG(fentry_vfs_readv)
{
	return on_entry(VFS_READV);
}
SEC("fexit/vfs_readv")
int BPF_PROG(fexit_vfs_readv, struct file *f, const void *vec, unsigned long vlen, loff_t *pos,
	     int flags, ssize_t ret)
{
	return on_return(ret);
}
SEC("fentry/vfs_writev")
int BPF_PROG(fentry_vfs_writev)
{
	return on_entry(VFS_WRITEV);
}
SEC("fexit/vfs_writev")
int BPF_PROG(fexit_vfs_writev, struct file *f, const void *vec, unsigned long vlen, loff_t *pos,
	     int flags, ssize_t ret)
{
	return on_return(ret);
}
SEC("fentry/vfs_fsync_range")
int BPF_PROG(fentry_vfs_fsync_range)
{
	return on_entry(VFS_FSYNC);
}
SEC("fexit/vfs_fsync_range")
int BPF_PROG(fexit_vfs_fsync_range, struct file *f, loff_t start, loff_t end, int datasync, int ret)
{
	return on_return(ret);
}

/* kprobe/kretprobe: the fallback where fentry is missing or refused. */
SEC("kprobe/vfs_read")
int BPF_KPROBE(kprobe_vfs_read)
{
	return on_entry(VFS_READ);
}
SEC("kretprobe/vfs_read")
int BPF_KRETPROBE(kretprobe_vfs_read, long ret)
{
	return on_return(ret);
}
SEC("kprobe/vfs_write")
int BPF_KPROBE(kprobe_vfs_write)
{
	return on_entry(VFS_WRITE);
}
SEC("kretprobe/vfs_write")
int BPF_KRETPROBE(kretprobe_vfs_write, long ret)
{
	return on_return(ret);
}
SEC("kprobe/vfs_readv")
int BPF_KPROBE(kprobe_vfs_readv)
{
	return on_entry(VFS_READV);
}
SEC("kretprobe/vfs_readv")
int BPF_KRETPROBE(kretprobe_vfs_readv, long ret)
{
	return on_return(ret);
}
SEC("kprobe/vfs_writev")
int BPF_KPROBE(kprobe_vfs_writev)
{
	return on_entry(VFS_WRITEV);
}
SEC("kretprobe/vfs_writev")
int BPF_KRETPROBE(kretprobe_vfs_writev, long ret)
{
	return on_return(ret);
}
SEC("kprobe/vfs_fsync_range")
int BPF_KPROBE(kprobe_vfs_fsync_range)
{
	return on_entry(VFS_FSYNC);
}
SEC("kretprobe/vfs_fsync_range")
int BPF_KRETPROBE(kretprobe_vfs_fsync_range, long ret)
{
	return on_return((int)ret);
}
