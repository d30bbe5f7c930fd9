// When tier 2 runs under collectors.osd.detail: auto (collectors/osd/osd_detail.h): windows opened
// by slow ops, by a minute's p99 or by a request, bounded and rate-limited.
#include <catch2/catch.hpp>

#include "collectors/osd/osd_detail.h"

using namespace cephscope;
using namespace std::chrono_literals;

namespace {

using Clock = DetailWindows::Clock;
const OsdId kOsd{"osd.0", "fsid"};

// A histogram of N samples in slot I (bound 1 us * 2^I).
hist samples(std::uint64_t n, std::size_t slot) {
  hist h{};
  h.slots[slot] = n;
  return h;
}

hist plus(hist a, const hist& b) {
  add_hist(a, b);
  return a;
}

// Client ops only: their whole-op histogram and own slow ops.
OsdTotals ops(const hist& whole, std::uint64_t slow) {
  OsdTotals t;
  t.ops = whole;
  t.own_slow = slow;
  return t;
}

DetailSettings settings() {
  DetailSettings s;
  s.window = 60s;
  s.min_interval = 600s;
  s.p99_bound_seconds = 0.5;
  s.min_ops = 20;
  return s;
}

}  // namespace

TEST_CASE("a quantile's upper bound from the log2 slots", "[unit][osd_detail]") {
  CHECK(DetailWindows::quantile_bound(hist{}, 0.99) == 0);
  const hist h = plus(samples(99, 10), samples(1, 20));  // 99 at <= 1.024 ms, 1 at <= 1.05 s
  CHECK(DetailWindows::quantile_bound(h, 0.99) == Approx(0.001024));
  CHECK(DetailWindows::quantile_bound(h, 1.0) == Approx(1.048576));
  CHECK(std::isinf(DetailWindows::quantile_bound(samples(5, HIST_FINITE_SLOTS), 0.5)));
}

TEST_CASE("rising slow ops open one bounded window, then rest for the interval",
          "[unit][osd_detail]") {
  DetailWindows w(settings());
  const auto t0 = Clock::now();
  const hist fast = samples(100, 10);
  CHECK_FALSE(w.observe(kOsd, t0, ops(fast, 0)));
  CHECK_FALSE(w.observe(kOsd, t0 + 5s, ops(plus(fast, fast), 0)));  // fast ops: nothing
  CHECK(w.observe(kOsd, t0 + 10s, ops(plus(fast, fast), 2)) == "slow_ops");
  CHECK(w.active(kOsd));
  CHECK_FALSE(w.observe(kOsd, t0 + 15s, ops(plus(fast, fast), 5)));  // already open
  CHECK_FALSE(w.observe(kOsd, t0 + 65s, ops(plus(fast, fast), 5)));  // none since: recovered
  CHECK(w.expire(t0 + 69s).empty());
  CHECK(w.expire(t0 + 70s) == std::vector<OsdId>{kOsd});
  CHECK_FALSE(w.active(kOsd));
  CHECK_FALSE(w.observe(kOsd, t0 + 100s, ops(plus(fast, fast), 9)));  // resting: 600 s
  CHECK(w.observe(kOsd, t0 + 611s, ops(plus(fast, fast), 12)) == "slow_ops");
  CHECK(w.states().at(kOsd).windows.at("slow_ops") == 2);
}

TEST_CASE("a minute's p99 above the bound opens a window; too few ops do not",
          "[unit][osd_detail]") {
  DetailWindows w(settings());
  const auto t0 = Clock::now();
  hist total = samples(1000, 10);
  CHECK_FALSE(w.observe(kOsd, t0, ops(total, 0)));
  total = plus(total, samples(10, 20));  // 10 ops near 1 s: fewer than min_ops
  CHECK_FALSE(w.observe(kOsd, t0 + 5s, ops(total, 0)));
  total = plus(total, samples(30, 20));  // 40 in the minute, all slow: p99 ~1 s > 0.5 s
  CHECK(w.observe(kOsd, t0 + 10s, ops(total, 0)) == "latency");
}

TEST_CASE("an operator's request opens a window unless one is open", "[unit][osd_detail]") {
  DetailWindows w(settings());
  const auto t0 = Clock::now();
  const auto until = w.request(kOsd, t0);
  REQUIRE(until.has_value());
  CHECK(*until == t0 + 60s);
  CHECK_FALSE(w.request(kOsd, t0 + 1s).has_value());
  CHECK(w.expire(t0 + 60s) == std::vector<OsdId>{kOsd});
  CHECK(w.request(kOsd, t0 + 61s).has_value());  // requests are not rate-limited
  CHECK(w.states().at(kOsd).windows.at("request") == 2);
}

TEST_CASE("a primary waiting for a replica is not the slow OSD; the replica's sub-ops are",
          "[unit][osd_detail]") {
  DetailWindows w(settings());
  const auto t0 = Clock::now();
  const OsdId replica{"osd.2", "fsid"};
  OsdTotals primary;
  primary.ops = samples(1000, 10);
  CHECK_FALSE(w.observe(kOsd, t0, primary));
  CHECK_FALSE(w.observe(replica, t0, OsdTotals{}));
  // 40 ops near 1 s on the primary, all of it in replication: its p99 is the replica's
  primary.ops = plus(primary.ops, samples(40, 20));
  primary.replication = samples(40, 20);
  CHECK_FALSE(w.observe(kOsd, t0 + 5s, primary));
  OsdTotals slow_replica;
  slow_replica.subops = samples(40, 20);
  CHECK(w.observe(replica, t0 + 5s, slow_replica) == "latency");
  // slow ops under replication are not the primary's own (own_slow stays 0)
  CHECK_FALSE(w.active(kOsd));
  // another primary's ops slow in its own stages, its replication fast: its own
  const OsdId own{"osd.1", "fsid"};
  OsdTotals slow_itself;
  slow_itself.ops = samples(1000, 10);
  slow_itself.replication = samples(1000, 8);
  CHECK_FALSE(w.observe(own, t0, slow_itself));
  slow_itself.ops = plus(slow_itself.ops, samples(40, 20));
  slow_itself.replication = plus(slow_itself.replication, samples(40, 8));
  CHECK(w.observe(own, t0 + 5s, slow_itself) == "latency");
}

TEST_CASE("a window whose OSD is still slow runs another; one that recovered closes",
          "[unit][osd_detail]") {
  DetailWindows w(settings());
  const auto t0 = Clock::now();
  std::uint64_t slow = 0;
  CHECK_FALSE(w.observe(kOsd, t0, ops(samples(100, 10), slow)));
  CHECK(w.observe(kOsd, t0 + 5s, ops(samples(100, 10), ++slow)) == "slow_ops");
  // slow all through the window: at its end it runs another, counted, not a rest
  for (auto at = t0 + 10s; at <= t0 + 65s; at += 5s) {
    CHECK_FALSE(w.observe(kOsd, at, ops(samples(100, 10), ++slow)));
  }
  CHECK(w.expire(t0 + 65s).empty());
  CHECK(w.active(kOsd));
  CHECK(w.states().at(kOsd).windows.at("slow_ops") == 2);
  // recovered: no slow op since the last check, though the last minute had many
  CHECK_FALSE(w.observe(kOsd, t0 + 70s, ops(samples(100, 10), slow)));
  CHECK(w.expire(t0 + 125s) == std::vector<OsdId>{kOsd});
  CHECK_FALSE(w.active(kOsd));
  CHECK(w.states().at(kOsd).windows.at("slow_ops") == 2);
}
