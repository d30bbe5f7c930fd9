/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared between block.bpf.c and daemon/collectors/block/block_collector.cpp. */
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

/*
 * A request's record, in the slot its key hashes to (block.bpf.c), the key stored with it.
 * 64 bytes, in a table whose values start on a page (BPF_F_MMAPABLE): one cache line each, so
 * a completion loads one line, written at issue on whichever CPU issued it.
 */
struct block_rq {
	__u64 id;
	__u32 dev;
	__u32 live;	 /* 0 once completed: the slot waits for its next request */
	__u64 insert_ns; /* queue start: insert (tracepoints), allocation (tp_btf); 0: none */
	__u64 issue_ns;	 /* 0 until issued, and again once requeued */
	__u64 submit_ns; /* its first bio's wait for the request (0: not seen) */
	__u32 target;
	__u32 op;
	__u32 bytes;   /* tp_btf: its size at issue, counted with its completion */
	__u32 counted; /* tracepoints: its bytes and submit time are in block_stats (at issue) */
	__u64 unused;  /* to the cache line */
};

/* A bio submitted, until its request is inserted or issued (or it merges into one). */
struct block_bio {
	__u64 sector;
	__u64 queue_ns; /* block_bio_queue, or the remap that stamped it again */
	__u64 rq_ns;	/* its request was allocated (classic block_getrq); 0 before */
	__u32 dev;	/* the whole disk */
	__u32 target;	/* CEPHSCOPE_UNTRACKED for other processes' bios */
	__u32 op;
	__u32 live; /* BIO_LIVE, BIO_REQUEUED, or 0 once its request took it, or it merged */
};

/*
 * A bio's record is live until its request takes it. A requeued request (tp_btf) leaves one
 * too, at its disk and sector, for its next issue: its owner and op, its submit time in
 * queue_ns, and in rq_ns when it was requeued (its queue time restarts there).
 */
#define BIO_LIVE 1
#define BIO_REQUEUED 2

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

/*
 * Series slots: the daemon gives a (target, disk) series it found in block_stats a slot of a
 * per-CPU array, the one at block_series_slot(), while that slot is free; the programs then
 * find its stats, one per op, by index (block.bpf.c). The slot's owner word names the
 * series; a series without its slot stays in the hash.
 */
#define BLOCK_SERIES_SLOTS 128
#define BLOCK_SERIES_OWNED (1ULL << 63)

static inline __u64 block_series_word(__u32 target, __u32 dev)
{
	return BLOCK_SERIES_OWNED | (__u64)target << 32 | dev;
}

static inline __u32 block_series_slot(__u32 target, __u32 dev)
{
	return (__u32)(((((__u64)target << 32) | dev) * 0x9E3779B97F4A7C15ULL) >> 32) &
	       (BLOCK_SERIES_SLOTS - 1);
}

#define BLOCK_FROZEN_MAX 1024
#define BLOCK_FREEZERS_MAX 1024
/* Slots of the direct-mapped in-flight tables (block.bpf.c): powers of two. */
#define BLOCK_RQ_SLOTS 32768
#define BLOCK_BIO_SLOTS 8192
#define BLOCK_STATS_MAX 8192
#define BLOCK_PARTITIONS_MAX 1024

/* The slot of in-flight key (ID, DEV) in a table of SLOTS, under the load's SEED. */
static inline __u32 block_slot(__u64 id, __u32 dev, __u64 seed, __u32 slots)
{
	return inflight_slot(id, dev, seed, slots);
}

/*
 * Slot POSITION of a run of 2^RUN_BITS neighbouring slots, the run picked by hashing RUN: keys
 * that sit side by side (a disk's blocks, a queue's requests) take records side by side, in
 * cache lines and pages of the table that the last key touched.
 */
static inline __u32 block_run_slot(__u64 run, __u32 position, __u32 run_bits, __u32 dev, __u64 seed,
				   __u32 slots)
{
	return ((block_slot(run, dev, seed, slots) << run_bits) |
		(position & ((1U << run_bits) - 1))) &
	       (slots - 1);
}

/*
 * A request's slot, for keys that are its address (tp_btf): blk-mq carves a queue's requests
 * side by side out of kernel pages, at least 256 bytes apart (struct request and the driver's
 * command, cache-aligned), and its tags cycle through all of them. So the request's 4 KiB
 * page picks a run of 16 slots and its 256-byte place in the page the slot: a queue's records
 * sit in a few pages of the table, not one page each (a 256-slot table, a test build's, took
 * 100 ns off each issue on a virtualised host).
 */
static inline __u32 block_request_slot(__u64 address, __u32 dev, __u64 seed, __u32 slots)
{
	return block_run_slot(address >> 12, (__u32)(address >> 8), 4, dev, seed, slots);
}

/*
 * A bio's slot: its 32 KiB chunk of the disk is hashed, and the chunk's eight 4 KiB blocks
 * take neighbouring slots, so a sequential stream (a RocksDB WAL, BlueStore's allocations)
 * writes records into cache lines it has just touched (a cold line costs ~0.15 us here).
 * Bios that start inside a 4 KiB block (a file system of 1 KiB blocks, 512-byte IO) hash as
 * chunks of their own, so that neighbours in one block do not take each other's slot.
 */
static inline __u32 block_sector_slot(__u64 sector, __u32 dev, __u64 seed, __u32 slots)
{
	__u64 chunk = (sector >> 6 << 3) | (sector & 7); /* low bits: the hash mixes upwards */

	return block_run_slot(chunk, (__u32)(sector >> 3), 3, dev, seed, slots);
}

#endif
