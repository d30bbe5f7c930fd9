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
  CHECK_FALSE(w.observe(kOsd, t0, fast, 0));
  CHECK_FALSE(w.observe(kOsd, t0 + 5s, plus(fast, fast), 0));  // fast ops: nothing
  CHECK(w.observe(kOsd, t0 + 10s, plus(fast, fast), 2) == "slow_ops");
  CHECK(w.active(kOsd));
  CHECK_FALSE(w.observe(kOsd, t0 + 15s, plus(fast, fast), 5));  // already open
  CHECK(w.expire(t0 + 69s).empty());
  CHECK(w.expire(t0 + 70s) == std::vector<OsdId>{kOsd});
  CHECK_FALSE(w.active(kOsd));
  CHECK_FALSE(w.observe(kOsd, t0 + 100s, plus(fast, fast), 9));  // resting: 600 s
  CHECK(w.observe(kOsd, t0 + 611s, plus(fast, fast), 12) == "slow_ops");
  CHECK(w.states().at(kOsd).windows.at("slow_ops") == 2);
}

TEST_CASE("a minute's p99 above the bound opens a window; too few ops do not",
          "[unit][osd_detail]") {
  DetailWindows w(settings());
  const auto t0 = Clock::now();
  hist total = samples(1000, 10);
  CHECK_FALSE(w.observe(kOsd, t0, total, 0));
  total = plus(total, samples(10, 20));  // 10 ops near 1 s: fewer than min_ops
  CHECK_FALSE(w.observe(kOsd, t0 + 5s, total, 0));
  total = plus(total, samples(30, 20));  // 40 in the minute, all slow: p99 ~1 s > 0.5 s
  CHECK(w.observe(kOsd, t0 + 10s, total, 0) == "latency");
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
