/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between syscall.bpf.c and daemon/collectors/syscall/syscall_collector.cpp. */
#ifndef CEPHSCOPE_SYSCALL_H
#define CEPHSCOPE_SYSCALL_H

#include "cephscope.h"

/* The traced syscalls, in the order of their names in the daemon (syscall_names). */
enum cephscope_syscall {
	SYS_READ,
	SYS_WRITE,
	SYS_PREAD64,
	SYS_PWRITE64,
	SYS_READV,
	SYS_WRITEV,
	SYS_PREADV,
	SYS_PWRITEV,
	SYS_PREADV2,
	SYS_PWRITEV2,
	SYS_FSYNC,
	SYS_FDATASYNC,
	SYS_SYNC_FILE_RANGE,
	SYS_IO_SUBMIT,
	SYS_IO_GETEVENTS,
	SYS_IO_URING_ENTER,
	SYS_SENDTO,
	SYS_SENDMSG,
	SYS_SENDMMSG,
	SYS_RECVFROM,
	SYS_RECVMSG,
	SYS_RECVMMSG,
	SYS_COUNT,
};

#define SYSCALL_STATS_MAX 16384

#endif
