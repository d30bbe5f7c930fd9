#include <catch2/catch.hpp>

#include <map>
#include <string>

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
  sink.apply_cap();
  CHECK(sink.series() == 3);
  CHECK(sink.dropped() == 1 + HIST_SLOTS + 2);
  sink.gauge("self", "self", {}, 1);  // after the cap: always there
  const auto families = sink.take();
  REQUIRE(families.size() == 3);  // c_seconds lost its only series: no empty family
  CHECK(families[0].metric.size() == 2);
  CHECK(families[1].metric.size() == 1);
  CHECK(families[2].name == "self");
  CHECK(sink.series() == 4);
}

TEST_CASE("the cap leaves out the least valuable series first, whatever came first", "[sink]") {
  struct hist h {};
  const std::size_t per_histogram = HIST_SLOTS + 2;
  // Room for two histograms: the per-process ones come first in the scrape, the OSD stage
  // histogram (priority 0) last, and the stage must be what stays.
  PrometheusSink sink(2 * per_histogram);
  sink.set_source("syscall", 2);
  sink.histogram("syscall_seconds", "s", {{"process", "a"}}, h);
  sink.histogram("syscall_seconds", "s", {{"process", "b"}}, h);
  sink.set_source("block", 1);
  sink.counter("block_bytes_total", "b", {{"device", "sda"}}, 1);
  sink.set_source("osd", 0);
  sink.histogram("osd_op_stage_seconds", "o", {{"ceph_daemon", "osd.0"}, {"stage", "queue"}}, h);
  sink.apply_cap();
  CHECK(sink.dropped() == 2 * per_histogram);  // both syscall histograms
  CHECK(sink.series() == per_histogram + 1);
  CHECK(sink.kept_by_source().at("osd") == per_histogram);
  CHECK(sink.kept_by_source().at("block") == 1);
  CHECK(sink.kept_by_source().at("syscall") == 0);
  CHECK(sink.dropped_by_source().at("syscall") == 2 * per_histogram);
  const auto families = sink.take();
  std::map<std::string, std::size_t> kept;
  for (const auto& f : families) {
    kept[f.name] = f.metric.size();
  }
  CHECK(kept["osd_op_stage_seconds"] == 1);
  CHECK(kept["block_bytes_total"] == 1);
  // A syscall histogram would not fit beside them: each goes, whole.
  CHECK(kept.count("syscall_seconds") == 0);
  // Within one priority, first come first kept.
  PrometheusSink same(per_histogram);
  same.histogram("x_seconds", "x", {{"n", "1"}}, h);
  same.histogram("x_seconds", "x", {{"n", "2"}}, h);
  const auto one = same.take();
  REQUIRE(one.size() == 1);
  REQUIRE(one[0].metric.size() == 1);
  CHECK(one[0].metric[0].label[0].value == "1");
}

TEST_CASE("empty label values are not written", "[sink]") {
  const auto m = metric_with({{"ceph_daemon", "osd.1"}, {"fsid", ""}, {"pid", "7"}});
  REQUIRE(m.label.size() == 2);
  CHECK(m.label[0].name == "ceph_daemon");
  CHECK(m.label[1].name == "pid");
}

TEST_CASE("a histogram counts the series its buckets make", "[sink]") {
  PrometheusSink sink(1000);
  struct hist h {};
  sink.histogram("full_seconds", "f", {}, h);
  sink.histogram("coarse_seconds", "c", {}, h, Buckets::kCoarse);
  sink.histogram("none_seconds", "n", {}, h, Buckets::kNone);
  sink.apply_cap();
  CHECK(sink.series() == 28 + 16 + 3);
}
