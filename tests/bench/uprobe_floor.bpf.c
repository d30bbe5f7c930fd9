// SPDX-License-Identifier: GPL-2.0
// What each piece of a uprobe program costs (tests/bench/uprobe_floor.cpp attaches one at a
// time to the same function and reads each one's run time from bpf_stats): nothing, user
// reads of growing size, many small reads, reads on distinct pages, a per-CPU array update,
// a hash lookup, and the least a tier-1 program does at an op's end.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define SCRATCH 2048

struct scratch {
	__u8 bytes[SCRATCH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} layouts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} by_tgid SEC(".maps");

SEC("uprobe")
int empty(struct pt_regs *ctx)
{
	return 0;
}

static __always_inline int read_n(struct pt_regs *ctx, __u32 n)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	bpf_probe_read_user(s->bytes, n, (const void *)PT_REGS_PARM1(ctx));
	return 0;
}

SEC("uprobe")
int read_8(struct pt_regs *ctx)
{
	return read_n(ctx, 8);
}
SEC("uprobe")
int read_64(struct pt_regs *ctx)
{
	return read_n(ctx, 64);
}
SEC("uprobe")
int read_512(struct pt_regs *ctx)
{
	return read_n(ctx, 512);
}
SEC("uprobe")
int read_1024(struct pt_regs *ctx)
{
	return read_n(ctx, 1024);
}
SEC("uprobe")
int read_2048(struct pt_regs *ctx)
{
	return read_n(ctx, 2048);
}

// N reads of 8 bytes, STRIDE bytes apart
static __always_inline int reads_apart(struct pt_regs *ctx, int n, int stride)
{
	const __u8 *base = (const __u8 *)PT_REGS_PARM1(ctx);
	__u64 v = 0, sum = 0;
#pragma unroll
	for (int i = 0; i < n; i++) {
		bpf_probe_read_user(&v, sizeof(v), base + i * stride);
		sum += v;
	}
	return sum == 1;
}

// 16 reads a cache line apart, as a program reading members one by one
SEC("uprobe")
int reads_16x8(struct pt_regs *ctx)
{
	return reads_apart(ctx, 16, 64);
}

// 4 reads a page apart, as a program visiting 4 objects (each a TLB entry)
SEC("uprobe")
int reads_4_pages(struct pt_regs *ctx)
{
	return reads_apart(ctx, 4, 4096);
}

/* The scratch and the counters in one per-CPU array: entry 0 the scratch, entry 1 counters. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_and_counters SEC(".maps");

/*
 * The least an OSD op's end costs tier 1 (bpf/osd.bpf.c, osd_op_done): find the process's
 * layout in an array and the per-CPU scratch, copy the op (512 B), then the events it points
 * to (1 KiB, two pages on), and count into entry KEY of the per-CPU array COUNTERS.
 */
static __always_inline int op_least(struct pt_regs *ctx, void *scratch_map, void *counters,
				    __u32 key)
{
	__u32 zero = 0;
	const __u32 *layout = bpf_map_lookup_elem(&layouts, &zero);
	struct scratch *s = bpf_map_lookup_elem(scratch_map, &zero);

	if (!layout || !s || *layout != 1)
		return 0;
	if (bpf_probe_read_user(s->bytes, 512, (const void *)PT_REGS_PARM1(ctx)))
		return 0;
	const void *events = *(const void **)s->bytes;

	if (bpf_probe_read_user(s->bytes + 1024, 1024, events))
		return 0;
	__u64 *v = bpf_map_lookup_elem(counters, &key);

	if (v)
		*v += s->bytes[1024];
	return 0;
}

SEC("uprobe")
int op_minimum(struct pt_regs *ctx)
{
	return op_least(ctx, &scratch, &counters, 7);
}

/* The same, counting in the entry after the scratch's, in the scratch's own map. */
SEC("uprobe")
int op_minimum_one_map(struct pt_regs *ctx)
{
	return op_least(ctx, &scratch_and_counters, &scratch_and_counters, 1);
}

SEC("uprobe")
int percpu_update(struct pt_regs *ctx)
{
	__u32 key = 7;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);
	if (v)
		*v += 1;
	return 0;
}

SEC("uprobe")
int hash_lookup(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 *v = bpf_map_lookup_elem(&by_tgid, &tgid);
	return v ? 1 : 0;
}

char LICENSE[] SEC("license") = "GPL";
