/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between discovery.bpf.c and daemon/discovery/process_events.cpp. */
#ifndef CEPHSCOPE_DISCOVERY_H
#define CEPHSCOPE_DISCOVERY_H

#include "cephscope.h"

enum cephscope_process_event_type {
	PROCESS_EXEC = 1,
	PROCESS_EXIT = 2,
};

/* One record per exec on the host and per exit of a tracked process: rare, never per IO. */
struct process_event {
	__u32 type;
	__u32 tgid;
};

#define DISCOVERY_RINGBUF_BYTES (64 * 1024)

#endif
