/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between vfs.bpf.c and daemon/collectors/vfs/vfs_collector.cpp. */
#ifndef CEPHSCOPE_VFS_H
#define CEPHSCOPE_VFS_H

#include "cephscope.h"

enum cephscope_vfs_op {
	VFS_READ,
	VFS_WRITE,
	VFS_READV,
	VFS_WRITEV,
	VFS_FSYNC,
	VFS_OP_COUNT,
};

#define VFS_STATS_MAX 8192

#endif
