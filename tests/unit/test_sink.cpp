#include <catch2/catch.hpp>

#include "metrics/prometheus_sink.h"

using namespace cephscope;

TEST_CASE("series beyond the cap are left out and counted", "[sink]") {
  PrometheusSink sink(3);
  sink.counter("a_total", "a", {{"x", "1"}}, 1);
  sink.counter("a_total", "a", {{"x", "2"}}, 2);
  sink.gauge("b", "b", {}, 3);
  sink.gauge("b", "b", {{"x", "4"}}, 4);  // over the cap
  struct hist h {};
  sink.histogram("c_seconds", "c", {}, h);  // over the cap: 28 series
  CHECK(sink.series() == 3);
  CHECK(sink.dropped() == 1 + HIST_SLOTS + 2);
  sink.set_uncapped(true);
  sink.gauge("self", "self", {}, 1);
  const auto families = sink.take();
  REQUIRE(families.size() == 3);
  CHECK(families[0].metric.size() == 2);
  CHECK(families[1].metric.size() == 1);
  CHECK(families[2].name == "self");
}

TEST_CASE("empty label values are not written", "[sink]") {
  const auto m = metric_with({{"ceph_daemon", "osd.1"}, {"fsid", ""}, {"pid", "7"}});
  REQUIRE(m.label.size() == 2);
  CHECK(m.label[0].name == "ceph_daemon");
  CHECK(m.label[1].name == "pid");
}
