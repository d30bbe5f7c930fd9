/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracked-process filter. Every collector object declares these maps; the daemon creates
 * them once and hands the same fds to each object (bpf_map__reuse_fd), so one update tracks
 * a process in all collectors at once. tracked_tgids holds every tracked tgid; tracked_slots
 * (cephscope.h) answers for most tgids without a hash lookup.
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CEPHSCOPE_TRACKED_SLOTS);
	__type(key, __u32);
	__type(value, __u64); /* packed: tgid, target id, TRACKED_SLOT_SHARED */
} tracked_slots SEC(".maps");

/*
 * The target id of process TGID, or CEPHSCOPE_UNTRACKED. The verifier inlines the array
 * lookup, so an untracked process whose slot holds no other tgid costs one load; the slot
 * is read once, as one word, so a concurrent update is seen whole or not at all.
 */
static __always_inline __u32 target_of(__u32 tgid)
{
	__u32 slot = tgid & (CEPHSCOPE_TRACKED_SLOTS - 1);
	__u64 *word = bpf_map_lookup_elem(&tracked_slots, &slot);
	__u64 packed = word ? *word : 0;
	__u32 *id;

	if ((__u32)packed == tgid)
		return TRACKED_SLOT_TARGET(packed); /* an empty slot is tgid 0, target 0 */
	if (!(packed & TRACKED_SLOT_SHARED))
		return CEPHSCOPE_UNTRACKED;
	id = bpf_map_lookup_elem(&tracked_tgids, &tgid);
	return id ? *id : CEPHSCOPE_UNTRACKED;
}

static __always_inline __u32 current_target(void)
{
	return target_of(bpf_get_current_pid_tgid() >> 32);
}

#endif
