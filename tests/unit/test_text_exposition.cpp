// The text exposition against prometheus-cpp's TextSerializer, the writer it replaced: the
// same bytes for every metric type, label escapes, timestamps and special values; a line feed
// in a label value is escaped as the format says, where prometheus-cpp did not.
#include <prometheus/text_serializer.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "metrics/text_exposition.h"

using namespace cephscope;

namespace {

prometheus::ClientMetric with_labels(std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  return m;
}

std::vector<prometheus::MetricFamily> sample_families() {
  std::vector<prometheus::MetricFamily> out;
  prometheus::MetricFamily counter{
      "cephscope_c_total", "A counter.", prometheus::MetricType::Counter, {}};
  for (const double v : {0.0, 1.0, 8.304700000000001e-05, 0.1 + 0.2, 1e21, 123456789.125,
                         std::numeric_limits<double>::infinity()}) {
    auto m = with_labels({{"process", R"(qemu "vm"\1)"}, {"op", "write"}});
    m.counter.value = v;
    counter.metric.push_back(m);
  }
  out.push_back(counter);

  prometheus::MetricFamily gauge{"cephscope_g", "", prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric bare;
  bare.gauge.value = std::nan("");
  gauge.metric.push_back(bare);
  auto stamped = with_labels({{"a", "b"}});
  stamped.gauge.value = -std::numeric_limits<double>::infinity();
  stamped.timestamp_ms = 1700000000123;
  gauge.metric.push_back(stamped);
  out.push_back(gauge);

  prometheus::MetricFamily hist{
      "cephscope_h_seconds", "A histogram.", prometheus::MetricType::Histogram, {}};
  for (const bool with_inf : {false, true}) {
    auto m = with_labels({{"ceph_daemon", "osd.1"}});
    m.histogram.sample_count = 7;
    m.histogram.sample_sum = 0.004321;
    for (const double le : {1e-06, 2e-06, 0.001024, 16.777216}) {
      m.histogram.bucket.push_back({3, le});
    }
    if (with_inf) {
      m.histogram.bucket.push_back({7, std::numeric_limits<double>::infinity()});
    }
    hist.metric.push_back(m);
  }
  prometheus::ClientMetric unlabelled;
  unlabelled.histogram.sample_count = 0;
  hist.metric.push_back(unlabelled);
  out.push_back(hist);

  prometheus::MetricFamily summary{
      "cephscope_s", "A summary.", prometheus::MetricType::Summary, {}};
  auto s = with_labels({{"x", "y"}});
  s.summary.sample_count = 4;
  s.summary.sample_sum = 2.5;
  s.summary.quantile = {{0.5, 0.25}, {0.99, 1.75}};
  summary.metric.push_back(s);
  out.push_back(summary);

  prometheus::MetricFamily untyped{"cephscope_u", "", prometheus::MetricType::Untyped, {}};
  prometheus::ClientMetric u;
  u.untyped.value = 42;
  untyped.metric.push_back(u);
  out.push_back(untyped);
  return out;
}

}  // namespace

TEST_CASE("the text exposition writes what prometheus-cpp's serializer writes", "[exposition]") {
  const auto families = sample_families();
  std::ostringstream reference;
  prometheus::TextSerializer().Serialize(reference, families);
  const std::string ours = serialize_text(families);
  CHECK(ours == reference.str());
  CHECK(ours.find("process=\"qemu \\\"vm\\\"\\\\1\"") != std::string::npos);
  CHECK(ours.find("le=\"+Inf\"} 7\n") != std::string::npos);
}

// A line feed in a label value is written as \n, as the format says.
TEST_CASE("the text exposition escapes a line feed in a label value", "[exposition]") {
  prometheus::MetricFamily gauge{"cephscope_g", "", prometheus::MetricType::Gauge, {}};
  gauge.metric.push_back(with_labels({{"process", "a\nb"}}));
  CHECK(serialize_text({gauge}) == "# TYPE cephscope_g gauge\ncephscope_g{process=\"a\\nb\"} 0\n");
}
