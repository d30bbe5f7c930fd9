// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * block collector: per device and op, submit time (bio queued -> request allocated), queue
 * time (insert -> issue), device time (issue -> complete), bytes, errors and bio merges;
 * attributed to the tracked process that submitted the request's first bio. Two flavours of
 * the request hooks: tp_btf (typed request pointers) and classic tracepoints (device +
 * sector); the daemon loads one of them. The bio hooks past block_bio_queue (getrq, merges,
 * splits) are classic tracepoints: their records are keyed by device and sector. tp_btf
 * needs no getrq: the request's allocation stamp, read at issue, ends the bio's submit time.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "block.h"
#include "maps.bpf.h"
#include "targets.bpf.h"
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * In-flight bios and requests live in direct-mapped tables: an array slot per hashed key,
 * the key stored in the record and compared on every read. A record costs one inlined array
 * load and plain stores where an LRU hash update and delete cost about 0.5 us per bio here
 * (tests/bench/bpf-cost.sh). The slot functions are in block.h. Bounded by construction, never
 * full: a new record takes its slot. Records of bios and of tp_btf's requests are stored blind,
 * and one displaced shows as no_start where it is missed (take_owner, on_rq_complete); a
 * classic tracepoint's request displaced while younger than INFLIGHT_STALE_NS is counted as
 * inflight_full (older ones are leftovers: a completion the kernel skipped). The hash is
 * seeded per load, so no process can aim its IO at the OSDs' slots.
 */

const volatile __u64 slot_seed = 0;

/*
 * A bio's stamp is the kernel's (bio::bi_issue, 51 bits: bio_queued_ns) or the clock's, so
 * its ages are taken modulo 2^51 (26 days), which holds for either: an age past half of that
 * is a stamp later than the time it is compared with.
 */
#define BIO_AGE_MAX (1ULL << 50)

static __always_inline __u64 bio_age(__u64 now, __u64 stamp)
{
	return (now - stamp) & BIO_TIME_MASK;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BLOCK_RQ_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE); /* values page-aligned: a record is one cache line */
	__type(key, __u32);
	__type(value, struct block_rq);
} block_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BLOCK_BIO_SLOTS);
	__type(key, __u32);
	__type(value, struct block_bio);
} block_bio_owner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, BLOCK_STATS_MAX);
	__type(key, struct block_stats_key);
	__type(value, struct block_stats);
} block_stats SEC(".maps");

/* The series slots (block.h): owner words, and BLOCK_OP_COUNT stats per slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BLOCK_SERIES_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} block_series_owner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BLOCK_SERIES_SLOTS *BLOCK_OP_COUNT);
	__type(key, __u32);
	__type(value, struct block_stats);
} block_series SEC(".maps");

/* Partition dev_t -> whole-disk dev_t, filled by the daemon from /sys/class/block. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BLOCK_PARTITIONS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} block_partitions SEC(".maps");

static const struct block_stats zero_stats;
static const struct hist zero_hist;

/*
 * The stats of series KEY: in its slot where the daemon gave it one (two array lookups),
 * else in the hash (a hashed key, a bucket and an element: cache lines that a busy host has
 * evicted since the last request).
 */
static __always_inline struct block_stats *stats_of(const struct block_stats_key *key)
{
	__u32 slot = block_series_slot(key->target, key->dev);
	__u64 *owner = bpf_map_lookup_elem(&block_series_owner, &slot);

	if (owner && *owner == block_series_word(key->target, key->dev)) {
		__u32 index = slot * BLOCK_OP_COUNT + key->op;

		return bpf_map_lookup_elem(&block_series, &index);
	}
	return lookup_or_init(&block_stats, key, &zero_stats);
}

static __always_inline __u32 whole_disk(__u32 dev)
{
	__u32 *disk = bpf_map_lookup_elem(&block_partitions, &dev);

	return disk ? *disk : dev;
}

/* The slot of bio (DEV, SECTOR); NULL only where the verifier wants the check. */
static __always_inline struct block_bio *bio_slot(__u32 dev, __u64 sector)
{
	__u32 slot = block_sector_slot(sector, dev, slot_seed, BLOCK_BIO_SLOTS);

	return bpf_map_lookup_elem(&block_bio_owner, &slot);
}

/* The live record of bio (DEV, SECTOR), or NULL. */
static __always_inline struct block_bio *find_bio(__u32 dev, __u64 sector)
{
	struct block_bio *bio = bio_slot(dev, sector);

	if (!bio || bio->live != BIO_LIVE || bio->dev != dev || bio->sector != sector)
		return 0;
	return bio;
}

/*
 * Stores BIO (its key filled in) in its slot, without reading the record it may displace: that
 * read is a load of a cold line, which the program would wait for where a store alone does not
 * (35-45 ns per bio here, tests/bench/bpf-cost.sh). A record lost that way is counted where the
 * loss shows, when its request finds another bio in its slot (take_owner).
 */
static __always_inline void put_bio(const struct block_bio *bio)
{
	struct block_bio *slot = bio_slot(bio->dev, bio->sector);

	if (slot)
		*slot = *bio;
}

/* Every bio, tracked or not: the per-device submit time counts every process's waits. */
static __always_inline void on_bio_queue(__u32 disk, __u64 sector, __u32 op, __u64 queued_ns)
{
	struct block_bio bio = {.sector = sector,
				.queue_ns = queued_ns,
				.dev = disk,
				.target = current_target(),
				.op = op,
				.live = BIO_LIVE};

	put_bio(&bio);
}

/*
 * The owner of bio (DEV, SECTOR) and its submit time, passed on to its request RQ. The
 * request's allocation is ALLOCATED_NS where the kernel stamped it (tp_btf), else the bio's
 * block_getrq (classic tracepoints). A request allocated before its bio was queued (one a
 * plug cached) kept the bio waiting for nothing: 1 ns, so that it still counts as a sample.
 * A request of data whose slot holds another bio's record had its own bio's record taken by
 * that one (put_bio), or its bio was queued before the programs were attached: either way its
 * start was not seen, no_start, as for a completion whose issue was not seen. Requests with
 * no bio of their own (a flush's, a passthrough command's) are not data reads, writes or
 * discards. A requeued request finds the record it left (on_btf_requeue): its owner, its
 * submit time and when its queue time restarted.
 */
static __always_inline void take_owner(struct block_rq *rq, __u32 dev, __u64 sector,
				       __u64 allocated_ns, __u64 bytes)
{
	struct block_bio *bio = bio_slot(dev, sector);
	__u64 got, waited;

	rq->target = CEPHSCOPE_UNTRACKED;
	if (!bio)
		return;
	if (bio->dev != dev || bio->sector != sector) {
		if (bytes && rq->op != BLOCK_OP_OTHER)
			count_lost(LOST_NO_START);
		return;
	}
	if (!bio->live)
		return;
	rq->target = bio->target;
	if (bio->live == BIO_REQUEUED) {
		bio->live = 0;
		rq->submit_ns = bio->queue_ns;
		rq->insert_ns = bio->rq_ns;
		return;
	}
	bio->live = 0;
	got = allocated_ns ? allocated_ns : bio->rq_ns;
	if (!got)
		return;
	waited = bio_age(got, bio->queue_ns);
	rq->submit_ns = waited && waited < BIO_AGE_MAX ? waited : 1;
}

/*
 * A request's first issue: its bytes, and the submit time of its first bio, in one stats
 * lookup (the lookup is most of what a block program costs).
 */
static __always_inline void count_issue(const struct block_rq *rq, __u64 bytes)
{
	struct block_stats_key skey = {.target = rq->target, .dev = rq->dev, .op = rq->op};
	struct block_stats *stats = stats_of(&skey);

	if (!stats)
		return;
	stats->bytes += bytes;
	if (rq->submit_ns)
		hist_add(&stats->submit, rq->submit_ns);
}

/* The stats a bio's outcome goes to: its owner's, on its disk, for its op. */
static __always_inline struct block_stats *bio_stats(const struct block_bio *bio)
{
	struct block_stats_key skey = {.target = bio->target, .dev = bio->dev, .op = bio->op};

	return stats_of(&skey);
}

/*
 * The bio got its request: the time it waited to get there (a frozen queue, no free tag)
 * goes with it to the request's first issue.
 */
static __always_inline void on_getrq(__u32 disk, __u64 sector)
{
	struct block_bio *bio = find_bio(disk, sector);

	if (bio && !bio->rq_ns)
		bio->rq_ns = bpf_ktime_get_ns();
}

/* The bio joined a request already there: no request of its own, so no submit sample. */
static __always_inline void on_bio_merge(__u32 dev, __u64 sector)
{
	struct block_bio *bio = find_bio(whole_disk(dev), sector);
	struct block_stats *stats;

	if (!bio)
		return;
	bio->live = 0;
	stats = bio_stats(bio);
	if (stats)
		stats->merges += 1;
}

/* A bio split at NEW_SECTOR: the remainder goes on from there with the same submit time. */
static __always_inline void on_bio_split(__u32 dev, __u64 sector, __u64 new_sector)
{
	struct block_bio *bio = find_bio(whole_disk(dev), sector);
	struct block_bio rest;

	if (!bio)
		return;
	rest = *bio;
	rest.sector = new_sector;
	put_bio(&rest);
}

/*
 * A stacked device (dm, md) or a partition sent the bio on to DEV at SECTOR. Some drivers
 * resubmit the same bio, whose block_bio_queue fired once only (BIO_TRACE_COMPLETION; md
 * raid0 on 5.10 does so), so the bio is stamped here as queued at its new disk, with the
 * owner and op it had above. Where a block_bio_queue follows (clones, first submissions), it
 * stamps the bio again. A partition's remap keeps the disk: a bio with no record there is
 * left to its block_bio_queue.
 */
static __always_inline void on_bio_remap(__u32 dev, __u64 sector, __u32 old_dev, __u64 old_sector,
					 __u32 op)
{
	__u32 old_disk = whole_disk(old_dev);
	struct block_bio *above = find_bio(old_disk, old_sector);
	struct block_bio bio = {.sector = sector,
				.queue_ns = bpf_ktime_get_ns(),
				.dev = whole_disk(dev),
				.live = BIO_LIVE};

	if (above) {
		above->live = 0;
		bio.target = above->target;
		bio.op = above->op;
	} else if (old_disk == bio.dev) {
		return;
	} else {
		bio.target = current_target();
		bio.op = op;
	}
	put_bio(&bio);
}

/*
 * The slot of request KEY: by its address (tp_btf, BY_ADDRESS) or by its disk and sector
 * (classic tracepoints).
 */
static __always_inline struct block_rq *rq_slot(const struct block_rq_key *key, bool by_address)
{
	__u32 slot = by_address ? block_request_slot(key->id, key->dev, slot_seed, BLOCK_RQ_SLOTS)
				: block_slot(key->id, key->dev, slot_seed, BLOCK_RQ_SLOTS);

	return bpf_map_lookup_elem(&block_inflight, &slot);
}

static __always_inline bool holds(const struct block_rq *rq, const struct block_rq_key *key)
{
	return rq->live && rq->id == key->id && rq->dev == key->dev;
}

/* Request KEY takes slot RQ: a live record of another request there is lost. */
static __always_inline void count_if_displaced(const struct block_rq *rq,
					       const struct block_rq_key *key, __u64 now)
{
	__u64 last = rq->issue_ns > rq->insert_ns ? rq->issue_ns : rq->insert_ns;

	if (rq->live && !holds(rq, key) && now - last < INFLIGHT_STALE_NS)
		count_lost(LOST_INFLIGHT_FULL);
}

/*
 * Classic tracepoints: insert (issue == false) or issue (issue == true) of a request of
 * `bytes`. Bytes count at the first issue, in the context that issues, so a completion the kernel
 * does not report loses a latency sample, never bytes: a classic tracepoint program is skipped
 * while another classic tracepoint or kprobe program runs on the same CPU (bpf_prog_active), as
 * when a completion interrupts a syscall tracepoint. Such a request's record is then stale: found
 * already issued without a requeue since, it is replaced, so the next request under the same
 * key (the same address, or the same device and sector) does not inherit its owner and op.
 */
static __always_inline void on_rq_start(const struct block_rq_key *key, __u64 sector, __u32 op,
					__u64 bytes, bool issue)
{
	__u64 now = bpf_ktime_get_ns();
	struct block_rq *rq = rq_slot(key, false);
	struct block_rq fresh = {.id = key->id, .dev = key->dev, .live = 1, .op = op};

	if (!rq)
		return;
	if (holds(rq, key) && !rq->issue_ns) {
		if (!issue) {
			rq->insert_ns = now; /* inserted again: queue time restarts */
			return;
		}
		rq->issue_ns = now;
		if (!rq->counted) {
			rq->counted = 1;
			count_issue(rq, bytes);
		}
		return;
	}
	count_if_displaced(rq, key, now);
	take_owner(&fresh, key->dev, sector, 0, bytes);
	if (issue) {
		fresh.issue_ns = now;
		fresh.counted = 1;
		count_issue(&fresh, bytes);
	} else {
		fresh.insert_ns = now;
	}
	*rq = fresh; /* one request's stamps never meet another's: its completion came first */
}

/*
 * tp_btf's issue, the first hook of a request: the kernel stamped its allocation
 * (request::start_time_ns, where iostats or a scheduler want it), which starts its queue
 * time, so no insert hook runs. Its size is kept and counted with the rest at completion:
 * a tp_btf program is skipped only where the same program already runs on that CPU, so its
 * completions are not lost the way a classic tracepoint's are. The record is stored without
 * reading the slot, as a bio's is (put_bio): the slot was last written by the completion of
 * the request before, on the CPU that took its interrupt, and loading it cost this program
 * more than all its other work on a virtualised host. A live record it displaces shows where
 * it is missed: that request's completion finds another's record, counted no_start.
 */
static __always_inline void on_btf_issue(const struct block_rq_key *key, __u64 sector, __u32 op,
					 __u32 bytes, __u64 allocated_ns)
{
	__u64 now = bpf_ktime_get_ns();
	struct block_rq *rq = rq_slot(key, true);
	struct block_rq fresh = {
	    .id = key->id, .dev = key->dev, .live = 1, .issue_ns = now, .op = op, .bytes = bytes};

	if (!rq)
		return;
	fresh.insert_ns = allocated_ns <= now ? allocated_ns : 0;
	take_owner(&fresh, key->dev, sector, fresh.insert_ns, bytes);
	*rq = fresh;
}

/*
 * Classic tracepoints: a requeued request is issued again later; its bytes are already
 * counted. Its wait on the requeue list is queue time.
 */
static __always_inline void on_rq_requeue(const struct block_rq_key *key)
{
	struct block_rq *rq = rq_slot(key, false);

	if (rq && holds(rq, key)) {
		rq->issue_ns = 0;
		rq->insert_ns = bpf_ktime_get_ns();
	}
}

/*
 * tp_btf: a requeued request's next issue writes a fresh record (on_btf_issue), so its
 * owner, op and submit time wait in a bio record at its disk and sector, with the time its
 * queue time restarts (its wait on the requeue list is queue time). Its bytes count at its
 * completion, once.
 */
static __always_inline void on_btf_requeue(const struct block_rq_key *key, __u64 sector)
{
	struct block_rq *rq = rq_slot(key, true);
	struct block_bio kept = {.sector = sector, .dev = key->dev, .live = BIO_REQUEUED};

	if (!rq || !holds(rq, key))
		return;
	rq->live = 0;
	kept.queue_ns = rq->submit_ns;
	kept.rq_ns = bpf_ktime_get_ns();
	kept.target = rq->target;
	kept.op = rq->op;
	put_bio(&kept);
}

/*
 * The record stays in its slot, marked done, for the next request there. A record of
 * on_btf_issue also brings its bytes and submit time (counted at issue by classic ones).
 */
static __always_inline void on_rq_complete(const struct block_rq_key *key, int error,
					   bool has_bytes, bool by_address)
{
	struct block_rq *rq = rq_slot(key, by_address);
	struct block_stats_key skey = {};
	struct block_stats *stats;
	__u64 now = bpf_ktime_get_ns();

	if (!rq || !holds(rq, key)) {
		if (has_bytes) /* no bytes: the end of a flush sequence (see btf_rq_complete) */
			count_lost(LOST_NO_START);
		return;
	}
	skey.target = rq->target;
	skey.dev = key->dev;
	skey.op = rq->op;
	__u64 insert_ns = rq->insert_ns, issue_ns = rq->issue_ns, submit_ns = rq->submit_ns;
	__u32 bytes = rq->bytes;
	rq->live = 0;
	if (!issue_ns)
		return; /* completed without issue (e.g. merged away): not a device IO */

	stats = stats_of(&skey);
	if (!stats)
		return;
	hist_add(&stats->device, now - issue_ns);
	if (insert_ns && insert_ns <= issue_ns)
		hist_add(&stats->queue, issue_ns - insert_ns);
	if (error)
		stats->errors += 1;
	if (bytes) {
		stats->bytes += bytes;
		if (submit_ns)
			hist_add(&stats->submit, submit_ns);
	}
}

/* ---- tp_btf flavour: typed pointers, requests keyed by address ---- */

#define REQ_OP_MASK_BITS 0xff

static __always_inline __u32 op_from_flags(__u32 cmd_flags)
{
	switch (cmd_flags & REQ_OP_MASK_BITS) {
	case 0:
		return BLOCK_OP_READ;
	case 1:
		return BLOCK_OP_WRITE;
	case 2:
		return BLOCK_OP_FLUSH;
	case 3:
		return BLOCK_OP_DISCARD;
	default:
		return BLOCK_OP_OTHER;
	}
}

/*
 * A request's address as a number, to hash. The verifier refuses arithmetic on a kernel
 * pointer, but allows a program that may read kernel addresses (CAP_PERFMON) the difference
 * of two pointers: the distance from a fixed map is the address less a constant.
 */
static __always_inline __u64 request_id(struct request *rq)
{
	return (__u64)((char *)rq - (char *)&block_inflight);
}

/*
 * A tp_btf program gets the tracepoint's own arguments, and two lists lost their leading
 * request_queue in Linux 5.11: block_bio_queue(q, bio) became (bio) in e8a676d61c07, and
 * block_rq_insert / block_rq_issue / block_rq_requeue(q, rq) became (rq) in a54895fa057c,
 * which 5.10.137 backported (so Debian's 5.10 has the new block_rq_* and the old
 * block_bio_queue). The
 * daemon reads the running kernel's prototypes (btf_trace_*) and sets these before load;
 * the verifier then never walks the other branch, whose ctx[1] a newer kernel would refuse.
 */
const volatile bool bio_queue_with_q = false;
const volatile bool rq_with_q = false;

/*
 * The tracepoint's first (with_q false) or second argument. Plain C lets clang fold the two
 * loads into one at ctx + with_q * 8, a computed context offset the verifier refuses; the
 * second is read in asm, which clang keeps inside its branch.
 */
static __always_inline void *tp_arg(__u64 *ctx, bool with_q)
{
	__u64 arg;

	if (!with_q)
		return (void *)ctx[0];
	asm volatile("%0 = *(u64 *)(%1 + 8)" : "=r"(arg) : "r"(ctx));
	return (void *)arg;
}

SEC("tp_btf/block_bio_queue")
int btf_bio_queue(__u64 *ctx)
{
	struct bio *bio = tp_arg(ctx, bio_queue_with_q);

	on_bio_queue(bio_disk_dev(bio), bio->bi_iter.bi_sector, op_from_flags(bio->bi_opf),
		     bio_queued_ns(bio));
	return 0;
}

SEC("tp_btf/block_rq_issue")
int btf_rq_issue(__u64 *ctx)
{
	struct request *rq = tp_arg(ctx, rq_with_q);
	struct block_rq_key key = {.id = request_id(rq), .dev = request_dev(rq)};

	on_btf_issue(&key, rq->__sector, op_from_flags(rq->cmd_flags), rq->__data_len,
		     rq->start_time_ns);
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int btf_rq_requeue(__u64 *ctx)
{
	struct request *rq = tp_arg(ctx, rq_with_q);
	struct block_rq_key key = {.id = request_id(rq), .dev = request_dev(rq)};

	on_btf_requeue(&key, rq->__sector);
	return 0;
}

/*
 * A write that asked for a cache flush (fdatasync's empty PREFLUSH, a FUA write on a disk
 * without FUA) goes through the flush machinery: its flush request and its data are issued
 * and completed as requests of their own, and the write itself completes once more at the
 * end of the sequence, with no bytes left and never issued as such. That completion is
 * dropped before any lookup: BlueStore's syncs make one per fdatasync.
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(btf_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	if (!nr_bytes && op_from_flags(rq->cmd_flags) == BLOCK_OP_WRITE)
		return 0;
	struct block_rq_key key = {.id = request_id(rq), .dev = request_dev(rq)};

	on_rq_complete(&key, error, nr_bytes != 0, true);
	return 0;
}

/* Classic tracepoints: requests keyed by device and start sector. */
#include "block_tracepoints.bpf.h"

/* Queue freezes: their maps and programs. */
#include "block_freeze.bpf.h"
