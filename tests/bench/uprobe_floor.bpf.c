// SPDX-License-Identifier: GPL-2.0
// What each piece of a uprobe program costs (tests/bench/uprobe_floor.cpp attaches one at a
// time to the same function and reads each one's run time from bpf_stats): nothing, user
// reads of growing size, many small reads, a per-CPU array update, a hash lookup.
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

// 16 reads of 8 bytes, 64 bytes apart (a cache line each), as a program reading members
SEC("uprobe")
int reads_16x8(struct pt_regs *ctx)
{
	const __u8 *base = (const __u8 *)PT_REGS_PARM1(ctx);
	__u64 v = 0, sum = 0;
#pragma unroll
	for (int i = 0; i < 16; i++) {
		bpf_probe_read_user(&v, sizeof(v), base + i * 64);
		sum += v;
	}
	return sum == 1;
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
