#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "metrics/histogram.h"

using namespace cephscope;

TEST_CASE("hist_slot puts each value in the smallest bucket whose bound holds it", "[histogram]") {
  CHECK(hist_slot(0) == 0);
  CHECK(hist_slot(1) == 0);
  CHECK(hist_slot(1000) == 0);  // exactly 1 us: le="1e-06"
  CHECK(hist_slot(1001) == 1);
  CHECK(hist_slot(2000) == 1);
  CHECK(hist_slot(2001) == 2);
  CHECK(hist_slot(4000) == 2);
  CHECK(hist_slot(4001) == 3);
  for (unsigned i = 1; i < HIST_FINITE_SLOTS; ++i) {
    const std::uint64_t bound = HIST_FIRST_BOUND_NS << i;
    INFO("bucket " << i);
    CHECK(hist_slot(bound) == i);
    CHECK(hist_slot(bound + 1) == i + 1);
    CHECK(hist_slot(bound - 1) == i);
  }
}

TEST_CASE("hist_slot agrees with its definition around every power of two", "[histogram]") {
  // the definition, by search: the smallest i with ns <= 1 us * 2^i, else the overflow slot
  const auto by_search = [](std::uint64_t ns) {
    for (unsigned i = 0; i < HIST_FINITE_SLOTS; ++i) {
      if (ns <= HIST_FIRST_BOUND_NS << i)
        return i;
    }
    return unsigned{HIST_FINITE_SLOTS};
  };
  for (unsigned c = 0; c < 64; ++c) {
    const std::uint64_t p = std::uint64_t{1} << c;
    for (const std::uint64_t ns : {p - 1, p, p + 1, p + p / 3, p + p / 2, 2 * p - 1}) {
      INFO("ns " << ns);
      CHECK(hist_slot(ns) == by_search(ns));
    }
  }
}

TEST_CASE("values beyond the last finite bound go to the overflow slot", "[histogram]") {
  const std::uint64_t last = HIST_FIRST_BOUND_NS << (HIST_FINITE_SLOTS - 1);  // 16.8 s
  CHECK(hist_slot(last) == HIST_FINITE_SLOTS - 1);
  CHECK(hist_slot(last + 1) == HIST_FINITE_SLOTS);
  CHECK(hist_slot(3600ULL * 1000000000ULL) == HIST_FINITE_SLOTS);
  CHECK(hist_slot(std::numeric_limits<std::uint64_t>::max()) == HIST_FINITE_SLOTS);
}

TEST_CASE("bucket bounds are powers of two microseconds, in seconds", "[histogram]") {
  const auto& b = bucket_bounds_seconds();
  CHECK(b.front() == Approx(1e-6));
  CHECK(b[1] == Approx(2e-6));
  CHECK(b.back() == Approx(16.777216));
}

TEST_CASE("conversion gives cumulative buckets, +Inf, the count and the real sum", "[histogram]") {
  struct hist h {};
  h.slots[0] = 3;                  // 3 values <= 1 us
  h.slots[2] = 2;                  // 2 values in (2, 4] us
  h.slots[HIST_FINITE_SLOTS] = 1;  // 1 overflow
  h.sum_ns = 20'000'000'123ULL;
  const auto p = to_prometheus(h);
  REQUIRE(p.bucket.size() == HIST_SLOTS);
  CHECK(p.bucket[0].cumulative_count == 3);
  CHECK(p.bucket[1].cumulative_count == 3);
  CHECK(p.bucket[2].cumulative_count == 5);
  CHECK(p.bucket[HIST_FINITE_SLOTS - 1].cumulative_count == 5);
  CHECK(std::isinf(p.bucket.back().upper_bound));
  CHECK(p.bucket.back().cumulative_count == 6);
  CHECK(p.sample_count == 6);
  CHECK(p.sample_sum == Approx(20.000000123));
}

TEST_CASE("an empty histogram still has every bucket", "[histogram]") {
  const struct hist h {};
  const auto p = to_prometheus(h);
  REQUIRE(p.bucket.size() == HIST_SLOTS);
  for (const auto& b : p.bucket) {
    CHECK(b.cumulative_count == 0);
  }
  CHECK(p.sample_count == 0);
  CHECK(p.sample_sum == 0.0);
}

TEST_CASE("coarse buckets keep every other slot, exactly; none keeps +Inf alone", "[histogram]") {
  struct hist h {};
  h.slots[0] = 1;                   // <= 1 us
  h.slots[1] = 2;                   // (1, 2] us: counted at le 4 us
  h.slots[3] = 4;                   // (4, 8] us: counted at le 16 us
  h.slots[24] = 8;                  // (8.4, 16.8] s: counted at le 16.8 s
  h.slots[HIST_FINITE_SLOTS] = 16;  // overflow
  h.sum_ns = 1000;
  const auto coarse = to_prometheus(h, Buckets::kCoarse);
  REQUIRE(coarse.bucket.size() == 14);  // 4^0 .. 4^12 us, then +Inf: 16 series
  const std::vector<std::uint64_t> expected = {1, 3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 15, 31};
  for (std::size_t j = 0; j < coarse.bucket.size(); ++j) {
    INFO("bucket " << j);
    CHECK(coarse.bucket[j].cumulative_count == expected[j]);
    if (j + 1 < coarse.bucket.size()) {
      CHECK(coarse.bucket[j].upper_bound == Approx(std::pow(4.0, static_cast<double>(j)) * 1e-6));
    }
  }
  CHECK(std::isinf(coarse.bucket.back().upper_bound));
  CHECK(coarse.sample_count == 31);

  const auto none = to_prometheus(h, Buckets::kNone);
  REQUIRE(none.bucket.size() == 1);
  CHECK(std::isinf(none.bucket[0].upper_bound));
  CHECK(none.bucket[0].cumulative_count == 31);
  CHECK(none.sample_count == 31);
  CHECK(none.sample_sum == Approx(1e-6));

  CHECK(buckets_setting(std::nullopt, Buckets::kCoarse) == Buckets::kCoarse);
  CHECK(buckets_setting(Buckets::kFull, Buckets::kNone) == Buckets::kFull);
  CHECK(buckets_setting(Buckets::kNone, Buckets::kFull) == Buckets::kNone);
}

TEST_CASE("an exemplar is taken by the first op of a slower bucket in its interval",
          "[histogram]") {
  exemplar_max m{};
  CHECK(exemplar_take(&m, 1, 3000) == 1);  // the interval's first op: (2, 4] us
  CHECK(m.interval == 1);
  CHECK(m.slot == 2);
  CHECK(m.whole_ns == 3000);
  CHECK(exemplar_take(&m, 1, 3999) == 0);  // slower, but in the same bucket
  CHECK(exemplar_take(&m, 1, 1500) == 0);  // faster
  CHECK(m.whole_ns == 3000);
  CHECK(exemplar_take(&m, 1, 4001) == 1);  // the next bucket
  CHECK(m.slot == 3);
  CHECK(m.whole_ns == 4001);
  CHECK(exemplar_take(&m, 2, 900) == 1);  // a new interval starts from its first op
  CHECK(m.interval == 2);
  CHECK(m.slot == 0);
  CHECK(m.whole_ns == 900);
}
