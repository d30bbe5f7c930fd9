/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between block.bpf.c and daemon/collectors/block_collector.cpp. */
#ifndef CEPHSCOPE_BLOCK_H
#define CEPHSCOPE_BLOCK_H

#include "cephscope.h"

enum cephscope_block_op {
	BLOCK_OP_READ,
	BLOCK_OP_WRITE,
	BLOCK_OP_FLUSH,
	BLOCK_OP_DISCARD,
	BLOCK_OP_OTHER,
	BLOCK_OP_COUNT,
};

/* A request in flight: by its address (tp_btf) or by device and start sector (tracepoint). */
struct block_rq_key {
	__u64 id;
	__u32 dev;
	__u32 pad;
};

struct block_rq {
	__u64 insert_ns; /* 0 when the request was issued without being inserted */
	__u64 issue_ns;	 /* 0 until issued, and again once requeued */
	__u32 target;
	__u32 op;
	__u32 counted; /* its bytes are in block_stats (counted at its first issue) */
	__u32 live;    /* 0 once completed: the record waits for the key's next request */
};

/* A bio submitted, until its request is inserted or issued (or it merges into one). */
struct block_bio_key {
	__u64 sector;
	__u32 dev;
	__u32 pad;
};

struct block_bio {
	__u64 queue_ns; /* block_bio_queue; 0 once its request was allocated (block_getrq) */
	__u32 target;	/* CEPHSCOPE_UNTRACKED for other processes' bios */
	__u32 op;
};

struct block_stats_key {
	__u32 target; /* CEPHSCOPE_UNTRACKED for requests of other processes */
	__u32 dev;    /* kernel dev_t of the whole disk: major << 20 | minor */
	__u32 op;
	__u32 pad;
};

struct block_stats {
	struct hist
	    submit; /* bio queued -> its request allocated: waits for a frozen queue or a tag */
	struct hist queue;  /* insert -> issue */
	struct hist device; /* issue -> complete */
	__u64 bytes;
	__u64 errors;
	__u64 merges; /* bios merged into an existing request: no request, no submit sample */
};

/* Queue freezes (fentry on the freeze/unfreeze functions): per queue while frozen. */
struct block_freeze {
	__u64 start_ns;
	__u32 depth; /* nested freezes: the outermost one is timed */
	__u32 dev;   /* the queue's disk; 0 where the queue does not name it (before 5.15) */
};

/* Freezes started, by the disk and the process (its comm) that started them. */
struct block_freezer_key {
	__u32 dev;
	char comm[16];
};

#define BLOCK_FROZEN_MAX 1024
#define BLOCK_FREEZERS_MAX 1024
#define BLOCK_INFLIGHT_MAX 16384
#define BLOCK_BIO_OWNER_MAX 16384
#define BLOCK_STATS_MAX 8192
#define BLOCK_PARTITIONS_MAX 1024

#endif
