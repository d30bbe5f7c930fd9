/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracked-process filter. Every collector object declares this map; the daemon creates
 * it once and hands the same fd to each object (bpf_map__reuse_fd), so one update tracks a
 * process in all collectors at once.
 */
#ifndef CEPHSCOPE_TARGETS_BPF_H
#define CEPHSCOPE_TARGETS_BPF_H

#include <bpf/bpf_helpers.h>
#include "cephscope.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CEPHSCOPE_MAX_TRACKED);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* target id, never CEPHSCOPE_UNTRACKED */
} tracked_tgids SEC(".maps");

/* The calling process's target id, or CEPHSCOPE_UNTRACKED. */
static __always_inline __u32 current_target(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *id = bpf_map_lookup_elem(&tracked_tgids, &tgid);

	return id ? *id : CEPHSCOPE_UNTRACKED;
}

#endif
