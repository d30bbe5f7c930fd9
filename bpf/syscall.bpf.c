// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * syscall collector: latency, bytes and errors per tracked process and syscall, folded into
 * per-CPU histograms. Untracked processes cost one array read at entry and one at exit.
 *
 * Two flavours of the same pair per syscall. fentry/fexit on the syscall's entry function
 * (`__x64_sys_pwrite64`, its attach target set by the daemon) run for that syscall only.
 * Syscall tracepoints put every syscall of every process on the kernel's slow path while any
 * of them is enabled; they are the fallback where fentry is refused.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "syscall.h"
#include "op_latency.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OP_INFLIGHT_SLOTS);
	__type(key, __u32);
	__type(value, struct op_start);
} syscall_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SYSCALL_STATS_MAX);
	__type(key, struct target_op_key);
	__type(value, struct op_stats);
} syscall_stats SEC(".maps");

OP_SERIES_MAPS(syscall, SYS_COUNT);

/* Syscalls whose return value is a byte count. */
#define BYTES_SYSCALLS                                                                             \
	((1u << SYS_READ) | (1u << SYS_WRITE) | (1u << SYS_PREAD64) | (1u << SYS_PWRITE64) |       \
	 (1u << SYS_READV) | (1u << SYS_WRITEV) | (1u << SYS_PREADV) | (1u << SYS_PWRITEV) |       \
	 (1u << SYS_PREADV2) | (1u << SYS_PWRITEV2) | (1u << SYS_SENDTO) | (1u << SYS_SENDMSG) |   \
	 (1u << SYS_RECVFROM) | (1u << SYS_RECVMSG))

static __always_inline int syscall_exit(long ret)
{
	const struct op_maps maps = {.inflight = &syscall_inflight,
				     .stats = &syscall_stats,
				     .owner = &syscall_series_owner,
				     .series = &syscall_series,
				     .ops = SYS_COUNT,
				     .bytes_ops = BYTES_SYSCALLS};

	return op_finish(&maps, ret);
}

/* One enter/exit pair per syscall and flavour: only the traced syscalls wake a program. */
#define TRACE_SYSCALL(name, sc)                                                                    \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                                \
	int enter_##name(void *ctx)                                                                \
	{                                                                                          \
		return op_begin(&syscall_inflight, sc);                                            \
	}                                                                                          \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                                 \
	int exit_##name(struct trace_event_raw_sys_exit *ctx)                                      \
	{                                                                                          \
		return syscall_exit(ctx->ret);                                                     \
	}                                                                                          \
	SEC("fentry")                                                                              \
	int fentry_##name(void *ctx)                                                               \
	{                                                                                          \
		return op_begin(&syscall_inflight, sc);                                            \
	}                                                                                          \
	SEC("fexit")                                                                               \
	int BPF_PROG(fexit_##name, const struct pt_regs *regs, long ret)                           \
	{                                                                                          \
		return syscall_exit(ret);                                                          \
	}

TRACE_SYSCALL(read, SYS_READ)
TRACE_SYSCALL(write, SYS_WRITE)
TRACE_SYSCALL(pread64, SYS_PREAD64)
TRACE_SYSCALL(pwrite64, SYS_PWRITE64)
TRACE_SYSCALL(readv, SYS_READV)
TRACE_SYSCALL(writev, SYS_WRITEV)
TRACE_SYSCALL(preadv, SYS_PREADV)
TRACE_SYSCALL(pwritev, SYS_PWRITEV)
TRACE_SYSCALL(preadv2, SYS_PREADV2)
TRACE_SYSCALL(pwritev2, SYS_PWRITEV2)
TRACE_SYSCALL(fsync, SYS_FSYNC)
TRACE_SYSCALL(fdatasync, SYS_FDATASYNC)
TRACE_SYSCALL(sync_file_range, SYS_SYNC_FILE_RANGE)
TRACE_SYSCALL(io_submit, SYS_IO_SUBMIT)
TRACE_SYSCALL(io_getevents, SYS_IO_GETEVENTS)
TRACE_SYSCALL(io_uring_enter, SYS_IO_URING_ENTER)
TRACE_SYSCALL(sendto, SYS_SENDTO)
TRACE_SYSCALL(sendmsg, SYS_SENDMSG)
TRACE_SYSCALL(sendmmsg, SYS_SENDMMSG)
TRACE_SYSCALL(recvfrom, SYS_RECVFROM)
TRACE_SYSCALL(recvmsg, SYS_RECVMSG)
TRACE_SYSCALL(recvmmsg, SYS_RECVMMSG)
