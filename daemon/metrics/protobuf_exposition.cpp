#include "metrics/protobuf_exposition.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "bpf/histogram.h"

namespace cephscope {
namespace {

// Slot k holds (2^(k-1), 2^k] us = (2^(k-20.93), 2^(k-19.93)] s, which native bucket k-20,
// (2^(k-21), 2^(k-20)] s, matches but for a factor 2^0.07 (1.048576 = 2^20 / 10^6).
constexpr int kFirstSlotIndex = -20;

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

// Field numbers of io.prometheus.client's messages (metrics.proto).
namespace field {
constexpr std::uint32_t kFamilyName = 1, kFamilyHelp = 2, kFamilyType = 3, kFamilyMetric = 4;
constexpr std::uint32_t kLabelName = 1, kLabelValue = 2;
constexpr std::uint32_t kMetricLabel = 1, kMetricGauge = 2, kMetricCounter = 3, kMetricUntyped = 5,
                        kMetricHistogram = 7;
constexpr std::uint32_t kValue = 1;  // Gauge, Counter, Untyped
constexpr std::uint32_t kSampleCount = 1, kSampleSum = 2, kBucket = 3, kSchema = 5,
                        kZeroThreshold = 6, kPositiveSpan = 12, kPositiveDelta = 13;
constexpr std::uint32_t kCumulativeCount = 1, kUpperBound = 2, kBucketExemplar = 3;
constexpr std::uint32_t kExemplarLabel = 1, kExemplarValue = 2, kExemplarTimestamp = 3;
constexpr std::uint32_t kSeconds = 1, kNanos = 2;  // google.protobuf.Timestamp
constexpr std::uint32_t kSpanOffset = 1, kSpanLength = 2;
}  // namespace field

// MetricType of metrics.proto.
std::uint64_t proto_type(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return 0;
    case prometheus::MetricType::Gauge:
      return 1;
    case prometheus::MetricType::Summary:
      return 2;
    case prometheus::MetricType::Histogram:
      return 4;
    default:
      return 3;  // untyped
  }
}

class Writer {
 public:
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(std::uint32_t number, WireType type) { varint((std::uint64_t{number} << 3) | type); }
  void uint(std::uint32_t number, std::uint64_t v) {
    tag(number, kVarint);
    varint(v);
  }
  void sint(std::uint32_t number, std::int64_t v) {
    tag(number, kVarint);
    varint(zigzag(v));
  }
  void real(std::uint32_t number, double v) {
    tag(number, kFixed64);
    const auto bits = std::bit_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) {
      out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
    }
  }
  void bytes(std::uint32_t number, std::string_view s) {
    tag(number, kLengthDelimited);
    varint(s.size());
    out_.append(s);
  }
  void message(std::uint32_t number, const Writer& sub) { bytes(number, sub.out_); }
  void raw(std::string_view s) { out_.append(s); }
  void packed_sint(std::uint32_t number, const std::vector<std::int64_t>& values) {
    Writer packed;
    for (const auto v : values) {
      packed.varint(zigzag(v));
    }
    bytes(number, packed.out_);
  }
  [[nodiscard]] const std::string& str() const { return out_; }

  static std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  }

 private:
  std::string out_;
};

// Classic buckets of Buckets::kCoarse: every other slot, then +Inf.
constexpr std::size_t kCoarseBuckets = HIST_FINITE_SLOTS / 2 + 2;

// The native form of a classic histogram whose buckets are the kernel's slots in order
// (schema 0), or every other slot (kCoarse: bucket j ends at 4^j us, native bucket j-10 of
// schema -1, (4^(j-11), 4^(j-10)] s, 4.6% below as with schema 0).
void native(Writer& h, const prometheus::ClientMetric::Histogram& classic, int schema) {
  std::vector<std::int64_t> counts;
  std::uint64_t below = 0;
  for (const auto& b : classic.bucket) {
    counts.push_back(static_cast<std::int64_t>(b.cumulative_count - below));
    below = b.cumulative_count;
  }
  std::size_t first = 0;
  while (first < counts.size() && counts[first] == 0) {
    ++first;
  }
  std::size_t last = counts.size();
  while (last > first && counts[last - 1] == 0) {
    --last;
  }
  h.sint(field::kSchema, schema);
  h.real(field::kZeroThreshold, 0);
  Writer span;
  if (first == last) {
    // No observation: a no-op span, which marks the histogram native.
    span.sint(field::kSpanOffset, 0);
    span.uint(field::kSpanLength, 0);
    h.message(field::kPositiveSpan, span);
    return;
  }
  span.sint(field::kSpanOffset, schema == 0 ? native_bucket_index(first)
                                            : kFirstSlotIndex / 2 + static_cast<int>(first));
  span.uint(field::kSpanLength, last - first);
  h.message(field::kPositiveSpan, span);
  std::vector<std::int64_t> deltas;
  std::int64_t previous = 0;
  for (std::size_t i = first; i < last; ++i) {
    deltas.push_back(counts[i] - previous);
    previous = counts[i];
  }
  h.packed_sint(field::kPositiveDelta, deltas);
}

Writer label_pair(std::string_view name, std::string_view value) {
  Writer pair;
  pair.bytes(field::kLabelName, name);
  pair.bytes(field::kLabelValue, value);
  return pair;
}

Writer exemplar_message(const Exemplar& e) {
  Writer w;
  w.message(field::kExemplarLabel, label_pair("trace_id", e.trace_id));
  w.real(field::kExemplarValue, e.value);
  Writer at;
  const double seconds = std::floor(e.timestamp);
  at.uint(field::kSeconds, static_cast<std::uint64_t>(seconds));
  at.uint(field::kNanos, static_cast<std::uint64_t>((e.timestamp - seconds) * 1e9));
  w.message(field::kExemplarTimestamp, at);
  return w;
}

Writer histogram(const prometheus::ClientMetric::Histogram& classic, const Exemplar* exemplar) {
  Writer h;
  h.uint(field::kSampleCount, classic.sample_count);
  h.real(field::kSampleSum, classic.sample_sum);
  const std::size_t with_exemplar =
      exemplar != nullptr ? exemplar_bucket(classic, exemplar->value) : classic.bucket.size();
  for (std::size_t i = 0; i < classic.bucket.size(); ++i) {
    const auto& b = classic.bucket[i];
    Writer bucket;
    bucket.uint(field::kCumulativeCount, b.cumulative_count);
    bucket.real(field::kUpperBound, b.upper_bound);
    if (i == with_exemplar) {
      bucket.message(field::kBucketExemplar, exemplar_message(*exemplar));
    }
    h.message(field::kBucket, bucket);
  }
  // A histogram with the kernel's slots, or every other one, has a native form; one with
  // +Inf alone (Buckets::kNone) has none to give.
  if (!classic.bucket.empty() && std::isinf(classic.bucket.back().upper_bound)) {
    if (classic.bucket.size() == HIST_SLOTS) {
      native(h, classic, 0);
    } else if (classic.bucket.size() == kCoarseBuckets) {
      native(h, classic, -1);
    }
  }
  return h;
}

Writer metric(const prometheus::ClientMetric& m, prometheus::MetricType type,
              const Exemplar* exemplar) {
  Writer w;
  for (const auto& l : m.label) {
    w.message(field::kMetricLabel, label_pair(l.name, l.value));
  }
  Writer value;
  switch (type) {
    case prometheus::MetricType::Counter:
      value.real(field::kValue, m.counter.value);
      w.message(field::kMetricCounter, value);
      break;
    case prometheus::MetricType::Gauge:
      value.real(field::kValue, m.gauge.value);
      w.message(field::kMetricGauge, value);
      break;
    case prometheus::MetricType::Histogram:
      w.message(field::kMetricHistogram, histogram(m.histogram, exemplar));
      break;
    default:
      value.real(field::kValue, m.untyped.value);
      w.message(field::kMetricUntyped, value);
  }
  return w;
}

}  // namespace

int native_bucket_index(std::size_t slot) {
  return kFirstSlotIndex + static_cast<int>(slot);
}

std::string serialize_protobuf(const Exposition& exposition) {
  Writer out;
  for (std::size_t fi = 0; fi < exposition.families.size(); ++fi) {
    const auto& f = exposition.families[fi];
    Writer family;
    family.bytes(field::kFamilyName, f.name);
    family.bytes(field::kFamilyHelp, f.help);
    family.uint(field::kFamilyType, proto_type(f.type));
    for (std::size_t mi = 0; mi < f.metric.size(); ++mi) {
      family.message(field::kFamilyMetric,
                     metric(f.metric[mi], f.type, exposition.exemplar(fi, mi)));
    }
    out.varint(family.str().size());  // each message after its length
    out.raw(family.str());
  }
  return out.str();
}

}  // namespace cephscope
