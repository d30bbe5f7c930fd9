// OpenMetrics 1.0 from the exposition writer: counters declared without _total (the samples
// keep it, so the series are the text format's), a counter without the suffix declared
// unknown, NaN spelled as OpenMetrics spells it, histogram buckets before _count and _sum,
// an exemplar on the bucket its value is in, escapes, and # EOF. Debian's Prometheus parses the
// daemon's real output in tests/e2e/test_op_trace.cpp, and prometheus_client's strict parser
// in tests/prometheus/openmetrics-check.py.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "collectors/exemplars.h"
#include "core/hist.h"
#include "endpoint/negotiation.h"
#include "metrics/histogram.h"
#include "metrics/prometheus_sink.h"
#include "metrics/text_exposition.h"

using namespace cephscope;

namespace {

prometheus::ClientMetric::Histogram three_buckets() {
  prometheus::ClientMetric::Histogram h;
  h.sample_count = 5;
  h.sample_sum = 0.0031;
  h.bucket = {{1, 0.001}, {4, 0.002}, {5, std::numeric_limits<double>::infinity()}};
  return h;
}

}  // namespace

TEST_CASE("OpenMetrics: the text format's series, declared as OpenMetrics declares them",
          "[openmetrics]") {
  Exposition e;
  prometheus::MetricFamily counter{
      "cephscope_c_total", R"(Quotes "here" and \ too.)", prometheus::MetricType::Counter, {}};
  prometheus::ClientMetric c;
  c.label = {{"process", "a\"b"}};
  c.counter.value = 3;
  counter.metric.push_back(c);
  prometheus::MetricFamily bytes{"cephscope_b", "", prometheus::MetricType::Counter, {}};
  prometheus::ClientMetric b;
  b.counter.value = 1;
  bytes.metric.push_back(b);
  prometheus::MetricFamily gauge{"cephscope_g", "", prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric g;
  g.gauge.value = std::nan("");
  gauge.metric.push_back(g);
  prometheus::MetricFamily hist{"cephscope_h_seconds", "H.", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric h;
  h.label = {{"ceph_daemon", "osd.1"}};
  h.histogram = three_buckets();
  hist.metric.push_back(h);
  hist.metric.push_back(h);
  e.families = {counter, bytes, gauge, hist};
  e.exemplars = {
      {std::nullopt},
      {std::nullopt},
      {std::nullopt},
      {Exemplar{"0123456789abcdef0123456789abcdef", 0.0015, 1700000000.25}, std::nullopt}};
  CHECK(serialize_openmetrics(e) ==
        "# HELP cephscope_c Quotes \\\"here\\\" and \\\\ too.\n"
        "# TYPE cephscope_c counter\n"
        "cephscope_c_total{process=\"a\\\"b\"} 3\n"
        "# TYPE cephscope_b unknown\n"
        "cephscope_b 1\n"
        "# TYPE cephscope_g gauge\n"
        "cephscope_g NaN\n"
        "# HELP cephscope_h_seconds H.\n"
        "# TYPE cephscope_h_seconds histogram\n"
        "cephscope_h_seconds_bucket{ceph_daemon=\"osd.1\",le=\"0.001\"} 1\n"
        "cephscope_h_seconds_bucket{ceph_daemon=\"osd.1\",le=\"0.002\"} 4 "
        "# {trace_id=\"0123456789abcdef0123456789abcdef\"} 0.0015 1700000000.250\n"
        "cephscope_h_seconds_bucket{ceph_daemon=\"osd.1\",le=\"+Inf\"} 5\n"
        "cephscope_h_seconds_count{ceph_daemon=\"osd.1\"} 5\n"
        "cephscope_h_seconds_sum{ceph_daemon=\"osd.1\"} 0.0031\n"
        "cephscope_h_seconds_bucket{ceph_daemon=\"osd.1\",le=\"0.001\"} 1\n"
        "cephscope_h_seconds_bucket{ceph_daemon=\"osd.1\",le=\"0.002\"} 4\n"
        "cephscope_h_seconds_bucket{ceph_daemon=\"osd.1\",le=\"+Inf\"} 5\n"
        "cephscope_h_seconds_count{ceph_daemon=\"osd.1\"} 5\n"
        "cephscope_h_seconds_sum{ceph_daemon=\"osd.1\"} 0.0031\n"
        "# EOF\n");
  // the plain text format stays as it was: no exemplar, Nan, _count first
  const std::string text = serialize_text(e.families);
  CHECK(text.find("trace_id") == std::string::npos);
  CHECK(text.find("cephscope_g Nan\n") != std::string::npos);
  CHECK(text.find("# TYPE cephscope_c_total counter\n") != std::string::npos);
}

TEST_CASE("an exemplar goes to the bucket its value is in, +Inf past the last bound",
          "[openmetrics]") {
  const auto h = three_buckets();
  CHECK(exemplar_bucket(h, 0.0005) == 0);
  CHECK(exemplar_bucket(h, 0.001) == 0);  // le: bounds are inclusive
  CHECK(exemplar_bucket(h, 0.0011) == 1);
  CHECK(exemplar_bucket(h, 30.0) == 2);
  prometheus::ClientMetric::Histogram no_inf;
  no_inf.bucket = {{1, 0.001}};
  CHECK(exemplar_bucket(no_inf, 1.0) == 1);  // none: no bucket gets it
}

TEST_CASE("the sink keeps an exemplar only where the histogram counted an op",
          "[openmetrics][sink]") {
  struct hist h {};
  h.slots[11] = 2;  // (1.024, 2.048] ms
  h.sum_ns = 3'000'000;
  PrometheusSink sink(100);
  const Exemplar in_bucket{"aa", 0.0015, 1.0};
  const Exemplar empty_bucket{"bb", 0.1, 1.0};
  sink.histogram("cephscope_a_seconds", "", {{"x", "1"}}, h, Buckets::kFull, &in_bucket);
  sink.histogram("cephscope_a_seconds", "", {{"x", "2"}}, h, Buckets::kFull, &empty_bucket);
  sink.histogram("cephscope_a_seconds", "", {{"x", "3"}}, h);
  const Exposition e = sink.take_exposition();
  REQUIRE(e.families.size() == 1);
  REQUIRE(e.families[0].metric.size() == 3);
  REQUIRE(e.exemplar(0, 0) != nullptr);
  CHECK(e.exemplar(0, 0)->trace_id == "aa");
  CHECK(e.exemplar(0, 1) == nullptr);  // an op from before a reset: its bucket is empty
  CHECK(e.exemplar(0, 2) == nullptr);
  CHECK(e.exemplar(1, 0) == nullptr);  // out of range: none
}

TEST_CASE("OpenMetrics for a scraper that prefers it to the text format", "[http][openmetrics]") {
  // Prometheus 2.42's Accept without native histograms, and with.
  const char* const plain =
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
      "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
  const char* const native =
      "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
      "encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"
      "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
  const auto om = ExpositionFormat::kOpenMetrics;
  CHECK(preferred_exposition(plain) == om);
  CHECK(preferred_exposition(native) == ExpositionFormat::kProtobuf);
  CHECK(preferred_exposition(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
            "encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0") == om);
  CHECK(preferred_exposition("application/openmetrics-text") == om);
  CHECK(preferred_exposition("") == ExpositionFormat::kText);
  CHECK(preferred_exposition("*/*") == ExpositionFormat::kText);
  CHECK(preferred_exposition("text/plain;version=0.0.4") == ExpositionFormat::kText);
  CHECK(preferred_exposition("application/openmetrics-text;version=2.0.0") ==
        ExpositionFormat::kText);
  CHECK(preferred_exposition("application/openmetrics-text;q=0.4,text/plain;q=0.5") ==
        ExpositionFormat::kText);
  CHECK(preferred_exposition("application/openmetrics-text;q=0") == ExpositionFormat::kText);
}

TEST_CASE("a series keeps its slowest op of the latest interval", "[exemplars]") {
  ExemplarTable<int> table;
  SlowOpLog log(4);
  const auto op = [](const char* trace, double seconds) {
    SlowOp o;
    o.trace_id = trace;
    o.seconds = seconds;
    o.slow = false;
    o.time_ns = 2'000'000'000;
    o.stages = {{"queue", seconds / 2}};
    return o;
  };
  table.offer(1, op("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0.002), 7, false);
  table.offer(1, op("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 0.001), 7, false);  // not slower
  auto kept = table.exported(1, &log);
  REQUIRE(kept);
  CHECK(kept->trace_id == "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  // exported once: the log has it for its trace id, once however many scrapes export it
  (void)table.exported(1, &log);
  CHECK(log.trace_json("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
  CHECK(log.json().find("\"exemplars_kept\": 1") != std::string::npos);
  CHECK(log.json().find("\"ops\": []") != std::string::npos);  // not listed as slow
  // a new interval: its first op replaces the last one's, however fast
  table.offer(1, op("cccccccccccccccccccccccccccccccc", 0.0001), 8, false);
  CHECK(table.exported(1, nullptr)->trace_id == "cccccccccccccccccccccccccccccccc");
  // the histograms' exemplars: the whole op's, and a measured stage's
  const auto whole = exemplar_of(*table.exported(1, nullptr));
  REQUIRE(whole);
  CHECK(whole->value == 0.0001);
  CHECK(whole->timestamp == 2.0);
  CHECK(exemplar_of(*table.exported(1, nullptr), "queue")->value == 0.00005);
  CHECK(!exemplar_of(*table.exported(1, nullptr), "commit"));
  CHECK(!exemplar_of(SlowOp{}));  // no trace id: nothing to point at
  table.erase_if([](int k) { return k == 1; });
  CHECK(table.size() == 0);
  CHECK(next_exemplar_interval(0xffffffffU) == 1);  // 0 is "off"
}

TEST_CASE("kept exemplars are bounded apart from the slow ops", "[exemplars]") {
  SlowOpLog log(2);
  for (int i = 0; i < 20; ++i) {
    SlowOp o;
    o.trace_id = std::string(31, 'a') + static_cast<char>('a' + (i % 6));
    o.slow = false;
    log.keep(o);
  }
  CHECK(log.json().find("\"exemplars_kept\": 8") != std::string::npos);  // 2 * kExemplarRoom
  CHECK(log.json().find("\"recorded\": 0") != std::string::npos);
}
