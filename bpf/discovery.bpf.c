// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * discovery: tells the daemon about new programs (exec) at once, so targets are picked up
 * without waiting for the next /proc scan, and drops an exiting target from the filter map
 * (and its slot) in the kernel, before the daemon has even read the event.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "discovery.h"
#include "maps.bpf.h"
#include "targets.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DISCOVERY_RINGBUF_BYTES);
} process_events SEC(".maps");

static __always_inline void emit(__u32 type, __u32 tgid)
{
	struct process_event *e = bpf_ringbuf_reserve(&process_events, sizeof(*e), 0);

	if (!e) {
		count_lost(LOST_INFLIGHT_FULL);
		return;
	}
	e->type = type;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

/*
 * Raw tracepoints: attached with BPF_RAW_TRACEPOINT_OPEN, not perf_event_open, so that a
 * kernel whose perf_event_paranoid refuses perf events without CAP_SYS_ADMIN still lets the
 * daemon see processes come and go. Neither program reads its arguments.
 */
SEC("raw_tracepoint/sched_process_exec")
int on_exec(void *ctx)
{
	emit(PROCESS_EXEC, bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int on_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 slot = tgid & (CEPHSCOPE_TRACKED_SLOTS - 1);
	__u64 *word;

	if ((__u32)id != tgid)
		return 0; /* a thread, not the process */
	/* The daemon rewrites the slot when it reads the event; until then others sharing it
	 * are found in the hash. */
	word = bpf_map_lookup_elem(&tracked_slots, &slot);
	if (word && (__u32)*word == tgid)
		*word &= TRACKED_SLOT_SHARED;
	if (bpf_map_delete_elem(&tracked_tgids, &tgid) == 0)
		emit(PROCESS_EXIT, tgid);
	return 0;
}
