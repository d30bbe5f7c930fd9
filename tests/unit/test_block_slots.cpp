#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <set>

#include "bpf/block.h"

// The placement of in-flight records in block.bpf.c's direct-mapped tables.

// A request's record fills one cache line of its page-aligned table.
static_assert(sizeof(block_rq) == 64);

TEST_CASE("a sequential stream of 4 KiB bios fills neighbouring slots, eight per chunk",
          "[block][slots]") {
  const __u64 seed = 0x1234567890abcdefULL;
  const __u32 dev = (8U << 20) | 16U;  // 8:16
  const __u64 chunk = 4096ULL * 64;    // some 32 KiB-aligned sector
  const __u32 first = block_sector_slot(chunk, dev, seed, BLOCK_BIO_SLOTS);
  CHECK(first % 8 == 0);
  for (__u64 block = 0; block < 8; ++block) {
    // 512-byte sectors: block i of the chunk starts at sector 8 * i.
    CHECK(block_sector_slot(chunk + 8 * block, dev, seed, BLOCK_BIO_SLOTS) == first + block);
  }
  // The next chunk lands elsewhere: chunks are hashed.
  const __u32 next = block_sector_slot(chunk + 64, dev, seed, BLOCK_BIO_SLOTS);
  CHECK(next % 8 == 0);
  CHECK(next != first);
}

TEST_CASE("bios inside one 4 KiB block take slots of their own", "[block][slots]") {
  // A file system of 1 KiB blocks writes neighbours 2 sectors apart, which its plug merges:
  // each must keep its record until its request or its merge takes it.
  const __u64 seed = 0x1234567890abcdefULL;
  const __u32 dev = (254U << 20) | 0U;
  std::set<__u32> used;
  constexpr __u64 kBlock = 4096ULL * 64 + 8;
  for (__u64 sector = kBlock; sector < kBlock + 8; ++sector) {
    used.insert(block_sector_slot(sector, dev, seed, BLOCK_BIO_SLOTS));
  }
  CHECK(used.size() == 8);
}

TEST_CASE("slots stay in the table, and the load's seed decides where a key goes",
          "[block][slots]") {
  std::mt19937_64 random(7);
  std::size_t moved = 0;
  constexpr int kKeys = 10000;
  for (int i = 0; i < kKeys; ++i) {
    const __u64 id = random();
    const auto dev = static_cast<__u32>(random() & 0xfffffffU);
    const __u32 a = block_slot(id, dev, 1, BLOCK_RQ_SLOTS);
    const __u32 b = block_slot(id, dev, 2, BLOCK_RQ_SLOTS);
    REQUIRE(a < BLOCK_RQ_SLOTS);
    REQUIRE(b < BLOCK_RQ_SLOTS);
    REQUIRE(block_sector_slot(id, dev, 1, BLOCK_BIO_SLOTS) < BLOCK_BIO_SLOTS);
    REQUIRE(block_request_slot(id, dev, 1, BLOCK_RQ_SLOTS) < BLOCK_RQ_SLOTS);
    moved += a != b ? 1 : 0;
  }
  // Another seed places nearly every key elsewhere (by chance the same: 1 in 32768).
  CHECK(moved > kKeys - 10);
}

TEST_CASE("requests of one queue rarely share a slot", "[block][slots]") {
  // blk-mq allocates a tag set's requests in one run of cache-aligned structs: 1024 of them,
  // 384 bytes apart, as a deep NVMe queue has.
  const __u64 base = 0xffff888100000000ULL;
  const __u32 dev = (259U << 20) | 0U;
  std::set<__u32> used;
  constexpr int kRequests = 1024;
  for (int i = 0; i < kRequests; ++i) {
    used.insert(block_request_slot(base + 384ULL * i, dev, 0x5eed, BLOCK_RQ_SLOTS));
  }
  // 96 pages' runs of 16 slots in 2048 runs: about 2 runs meet, at most 16 slots each.
  INFO(kRequests - used.size() << " of " << kRequests << " requests share a slot");
  CHECK(kRequests - used.size() < 64);
}

TEST_CASE("requests of one page take neighbouring slots", "[block][slots]") {
  // 256-byte requests (struct request of 6.18 plus a small command, cache-aligned): the 16 of a
  // 4 KiB page fill one run of 16 slots, in address order.
  const __u64 page = 0xffff888100000000ULL + 4096ULL * 37;
  const __u32 dev = (254U << 20) | 0U;
  const __u64 seed = 0x1234567890abcdefULL;
  const __u32 first = block_request_slot(page, dev, seed, BLOCK_RQ_SLOTS);
  CHECK(first % 16 == 0);
  for (__u64 i = 0; i < 16; ++i) {
    CHECK(block_request_slot(page + 256 * i, dev, seed, BLOCK_RQ_SLOTS) == first + i);
  }
  // The next page's run is elsewhere, and another load's seed moves the run.
  CHECK(block_request_slot(page + 4096, dev, seed, BLOCK_RQ_SLOTS) / 16 != first / 16);
  CHECK(block_request_slot(page, dev, seed + 1, BLOCK_RQ_SLOTS) != first);
}
