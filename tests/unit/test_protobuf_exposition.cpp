// The protobuf exposition's bytes, read back with a minimal wire-format reader: families in
// order with their length prefix, and each histogram's native form (schema 0, one span from
// its first to its last non-empty slot, count deltas) beside its classic buckets. The real
// reader, Prometheus with native histograms on, is tested in
// tests/prometheus/native-histograms.py.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <string_view>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/protobuf_exposition.h"

using namespace cephscope;

namespace {

struct Field {
  std::uint64_t number;
  std::uint64_t varint = 0;
  std::string_view bytes;
};

std::uint64_t varint(std::string_view& in) {
  std::uint64_t v = 0;
  for (int shift = 0; !in.empty(); shift += 7) {
    const auto b = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if ((b & 0x80u) == 0) {
      break;
    }
  }
  return v;
}

std::vector<Field> fields(std::string_view in) {
  std::vector<Field> out;
  while (!in.empty()) {
    const std::uint64_t key = varint(in);
    Field f{key >> 3, 0, {}};
    switch (key & 7) {
      case 0:
        f.varint = varint(in);
        break;
      case 1:
        f.bytes = in.substr(0, 8);
        in.remove_prefix(8);
        break;
      case 2: {
        const auto n = varint(in);
        f.bytes = in.substr(0, n);
        in.remove_prefix(n);
        break;
      }
      default:
        FAIL("unexpected wire type");
    }
    out.push_back(f);
  }
  return out;
}

std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

// A family of one histogram: 3 ops in (16, 32] us, 4 in (64, 128] us.
prometheus::MetricFamily osd_family() {
  struct hist h {};
  h.slots[5] = 3;
  h.slots[7] = 4;
  h.sum_ns = 500'000;
  prometheus::MetricFamily osd{"osd_seconds", "help", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric m;
  m.label.push_back({"ceph_daemon", "osd.0"});
  m.histogram = to_prometheus(h);
  osd.metric.push_back(m);
  return osd;
}

}  // namespace

TEST_CASE("histograms go out in both forms, in a length-delimited stream", "[protobuf]") {
  const prometheus::MetricFamily osd = osd_family();
  prometheus::MetricFamily up{"up", "help", prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric g;
  g.gauge.value = 1;
  up.metric.push_back(g);

  std::string_view stream;
  const std::string bytes = serialize_protobuf({osd, up});
  stream = bytes;
  std::vector<std::vector<Field>> families;
  while (!stream.empty()) {
    const auto n = varint(stream);
    families.push_back(fields(stream.substr(0, n)));
    stream.remove_prefix(n);
  }
  REQUIRE(families.size() == 2);
  CHECK(families[0][0].bytes == "osd_seconds");
  CHECK(families[0][2].varint == 4);  // HISTOGRAM
  CHECK(families[1][2].varint == 1);  // GAUGE

  const auto metric = fields(families[0][3].bytes);
  const Field* histogram = nullptr;
  for (const auto& f : metric) {
    histogram = f.number == 7 ? &f : histogram;
  }
  REQUIRE(histogram != nullptr);
  std::map<std::uint64_t, std::vector<Field>> by_number;
  for (const auto& f : fields(histogram->bytes)) {
    by_number[f.number].push_back(f);
  }
  CHECK(by_number[1].at(0).varint == 7);            // sample_count
  CHECK(by_number[3].size() == HIST_SLOTS);         // every classic bucket
  CHECK(unzigzag(by_number[5].at(0).varint) == 0);  // schema 0
  const auto span = fields(by_number[12].at(0).bytes);
  CHECK(unzigzag(span[0].varint) == native_bucket_index(5));
  CHECK(native_bucket_index(5) == -15);  // (2^-16, 2^-15] s = (15.3, 30.5] us
  CHECK(span[1].varint == 3);            // slots 5, 6, 7
  std::string_view packed = by_number[13].at(0).bytes;
  std::vector<std::int64_t> deltas;
  while (!packed.empty()) {
    deltas.push_back(unzigzag(varint(packed)));
  }
  CHECK(deltas == std::vector<std::int64_t>{3, -3, 4});  // counts 3, 0, 4
}

TEST_CASE("coarse buckets go out as schema -1; +Inf alone has no native form", "[protobuf]") {
  struct hist h {};
  h.slots[5] = 3;  // (16, 32] us: coarse bucket (16, 64] us, j = 3
  h.slots[8] = 4;  // (128, 256] us: coarse bucket (64, 256] us, j = 4
  h.sum_ns = 500'000;
  std::list<std::string> wire;  // the fields below are views into these bytes
  auto histogram_fields = [&](Buckets buckets) {
    prometheus::MetricFamily f{"x_seconds", "help", prometheus::MetricType::Histogram, {}};
    prometheus::ClientMetric m;
    m.histogram = to_prometheus(h, buckets);
    f.metric.push_back(m);
    wire.push_back(serialize_protobuf({f}));
    std::string_view stream = wire.back();
    const auto family = fields(stream.substr(0, varint(stream)));
    std::map<std::uint64_t, std::vector<Field>> by_number;
    for (const auto& field : fields(fields(family[3].bytes)[0].bytes)) {
      by_number[field.number].push_back(field);
    }
    return by_number;
  };
  auto coarse = histogram_fields(Buckets::kCoarse);
  CHECK(coarse[3].size() == 14);                  // the classic buckets
  CHECK(unzigzag(coarse[5].at(0).varint) == -1);  // schema -1: powers of 4
  const auto span = fields(coarse[12].at(0).bytes);
  CHECK(unzigzag(span[0].varint) == -7);  // j - 10: (4^-8, 4^-7] s = (15.3, 61] us
  CHECK(span[1].varint == 2);
  std::string_view packed = coarse[13].at(0).bytes;
  std::vector<std::int64_t> deltas;
  while (!packed.empty()) {
    deltas.push_back(unzigzag(varint(packed)));
  }
  CHECK(deltas == std::vector<std::int64_t>{3, 1});  // counts 3, 4

  auto none = histogram_fields(Buckets::kNone);
  CHECK(none[3].size() == 1);  // +Inf alone
  CHECK(none[5].empty());      // no schema: classic only
  CHECK(none[12].empty());
}

TEST_CASE("an empty histogram is still native: a no-op span", "[protobuf]") {
  struct hist h {};
  prometheus::MetricFamily f{"x_seconds", "help", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric m;
  m.histogram = to_prometheus(h);
  f.metric.push_back(m);
  const std::string bytes = serialize_protobuf({f});
  std::string_view stream = bytes;
  const auto family = fields(stream.substr(0, varint(stream)));
  const auto histogram = fields(fields(family[3].bytes)[0].bytes);
  bool span = false;
  for (const auto& field : histogram) {
    if (field.number == 12) {
      const auto s = fields(field.bytes);
      span = s.size() == 2 && s[0].varint == 0 && s[1].varint == 0;
    }
    CHECK(field.number != 13);  // no deltas
  }
  CHECK(span);
}

TEST_CASE("an exemplar rides on the classic bucket its value is in", "[protobuf]") {
  const prometheus::MetricFamily osd = osd_family();
  const std::string trace = "0123456789abcdef0123456789abcdef";
  const std::string bytes =
      serialize_protobuf(Exposition{{osd}, {{Exemplar{trace, 100e-6, 1700000000.5}}}});
  std::string_view stream = bytes;
  const auto n = varint(stream);
  const auto family = fields(stream.substr(0, n));
  const auto metric = fields(family[3].bytes);
  std::vector<std::size_t> with_exemplar;
  std::vector<Field> buckets;
  for (const auto& f : fields(metric.back().bytes)) {
    if (f.number == 3) {
      buckets.push_back(f);
    }
  }
  REQUIRE(buckets.size() == HIST_SLOTS);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    for (const auto& f : fields(buckets[i].bytes)) {
      if (f.number != 3) {
        continue;
      }
      with_exemplar.push_back(i);
      const auto e = fields(f.bytes);
      REQUIRE(e.size() == 3);
      const auto label = fields(e[0].bytes);
      CHECK(label[0].bytes == "trace_id");
      CHECK(label[1].bytes == trace);
      double value = 0;
      std::memcpy(&value, e[1].bytes.data(), 8);
      CHECK(value == 100e-6);
      const auto at = fields(e[2].bytes);
      CHECK(at[0].varint == 1700000000);  // seconds, then nanos
      CHECK(at[1].varint == 500'000'000);
    }
  }
  CHECK(with_exemplar == std::vector<std::size_t>{7});  // (64, 128] us
}
