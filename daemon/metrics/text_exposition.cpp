#include "metrics/text_exposition.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace cephscope {
namespace {

// A double as %.16g (an ostream of precision max_digits10 - 1), or Nan (OpenMetrics: NaN),
// +Inf, -Inf.
std::string_view format_number(double v, std::array<char, 32>& buf, bool openmetrics = false) {
  if (std::isnan(v)) {
    return openmetrics ? "NaN" : "Nan";
  }
  if (std::isinf(v)) {
    return v < 0 ? "-Inf" : "+Inf";
  }
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general,
                                 std::numeric_limits<double>::max_digits10 - 1);
  return {buf.data(), static_cast<std::size_t>(res.ptr - buf.data())};
}

class TextWriter {
 public:
  TextWriter(std::string& out, bool openmetrics) : out_(out), openmetrics_(openmetrics) {}

  void text(std::string_view s) { out_.append(s); }
  void number(double v) {
    std::array<char, 32> buf{};
    out_.append(format_number(v, buf, openmetrics_));
  }
  // HELP text: a backslash and a line feed escaped, and in OpenMetrics a double quote too.
  void help(std::string_view s) {
    for (const char c : s) {
      if (c == '\n') {
        out_.append("\\n");
      } else if (c == '\\' || (openmetrics_ && c == '"')) {
        out_.push_back('\\');
        out_.push_back(c);
      } else {
        out_.push_back(c);
      }
    }
  }
  template <typename Integer>
  void integer(Integer v) {
    std::array<char, 24> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out_.append(buf.data(), res.ptr);
  }
  // A metric's labels as `name="value",...`, written once per metric: a histogram repeats
  // them on each of its lines, and escaping them again for every bucket was most of a
  // scrape's CPU with a few dozen OSDs.
  void begin_metric(const prometheus::ClientMetric& metric) {
    labels_.clear();
    for (const auto& l : metric.label) {
      if (!labels_.empty()) {
        labels_.push_back(',');
      }
      labels_.append(l.name);
      labels_.append("=\"");
      escape_into(labels_, l.value);
      labels_.push_back('"');
    }
  }

  // name{labels[,extra="extra_value"]} and the space before the value. EXTRA_VALUE is a
  // number this file formatted (le, quantile): nothing in it needs an escape.
  void head(const prometheus::MetricFamily& family, std::string_view suffix = {},
            std::string_view extra = {}, std::string_view extra_value = {}) {
    text(family.name);
    text(suffix);
    if (labels_.empty() && extra.empty()) {
      out_.push_back(' ');
      return;
    }
    out_.push_back('{');
    text(labels_);
    if (!extra.empty()) {
      if (!labels_.empty()) {
        out_.push_back(',');
      }
      text(extra);
      text("=\"");
      text(extra_value);
      out_.push_back('"');
    }
    text("} ");
  }
  // The sample's timestamp, if any (OpenMetrics: in seconds), an exemplar, and the line's end.
  void tail(const prometheus::ClientMetric& metric, const Exemplar* exemplar = nullptr) {
    if (metric.timestamp_ms != 0) {
      out_.push_back(' ');
      if (openmetrics_) {
        number(static_cast<double>(metric.timestamp_ms) / 1e3);
      } else {
        integer(metric.timestamp_ms);
      }
    }
    if (exemplar != nullptr) {
      text(" # {trace_id=\"");
      escape_into(out_, exemplar->trace_id);
      text("\"} ");
      number(exemplar->value);
      out_.push_back(' ');
      std::array<char, 32> buf{};
      const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), exemplar->timestamp,
                                     std::chars_format::fixed, 3);
      out_.append(buf.data(), res.ptr);
    }
    out_.push_back('\n');
  }

 private:
  // A label value: backslash, double quote and line feed escaped as the format says (\n for
  // a line feed, where prometheus-cpp wrote a backslash and the line feed itself).
  static void escape_into(std::string& out, std::string_view s) {
    const auto special = [](char c) { return c == '\\' || c == '"' || c == '\n'; };
    if (std::none_of(s.begin(), s.end(), special)) {
      out.append(s);  // the usual case: sanitised label values need no escape
      return;
    }
    for (const char c : s) {
      if (c == '\n') {
        out.append("\\n");
        continue;
      }
      if (special(c)) {
        out.push_back('\\');
      }
      out.push_back(c);
    }
  }

  std::string& out_;
  bool openmetrics_;
  std::string labels_;  // the current metric's, from begin_metric
};

// The _count and _sum lines a histogram and a summary begin with.
void count_and_sum(TextWriter& w, const prometheus::MetricFamily& family,
                   const prometheus::ClientMetric& metric, std::uint64_t count, double sum) {
  w.head(family, "_count");
  w.integer(count);
  w.tail(metric);
  w.head(family, "_sum");
  w.number(sum);
  w.tail(metric);
}

// A histogram: _count and _sum, then its buckets (OpenMetrics: the buckets first, the
// exemplar on the bucket its value is in).
void histogram(TextWriter& w, const prometheus::MetricFamily& family,
               const prometheus::ClientMetric& metric, bool openmetrics,
               const Exemplar* exemplar = nullptr) {
  const auto& hist = metric.histogram;
  if (!openmetrics) {
    count_and_sum(w, family, metric, hist.sample_count, hist.sample_sum);
  }
  const std::size_t with_exemplar =
      exemplar != nullptr ? exemplar_bucket(hist, exemplar->value) : hist.bucket.size();
  double last = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < hist.bucket.size(); ++i) {
    const auto& bucket = hist.bucket[i];
    std::array<char, 32> buf{};
    w.head(family, "_bucket", "le", format_number(bucket.upper_bound, buf));
    last = bucket.upper_bound;
    w.integer(bucket.cumulative_count);
    w.tail(metric, i == with_exemplar ? exemplar : nullptr);
  }
  if (last != std::numeric_limits<double>::infinity()) {
    w.head(family, "_bucket", "le", "+Inf");
    w.integer(hist.sample_count);
    w.tail(metric);
  }
  if (openmetrics) {
    count_and_sum(w, family, metric, hist.sample_count, hist.sample_sum);
  }
}

void summary(TextWriter& w, const prometheus::MetricFamily& family,
             const prometheus::ClientMetric& metric, bool openmetrics) {
  const auto& sum = metric.summary;
  if (!openmetrics) {
    count_and_sum(w, family, metric, sum.sample_count, sum.sample_sum);
  }
  for (const auto& q : sum.quantile) {
    std::array<char, 32> buf{};
    w.head(family, "", "quantile", format_number(q.quantile, buf));
    w.number(q.value);
    w.tail(metric);
  }
  if (openmetrics) {
    count_and_sum(w, family, metric, sum.sample_count, sum.sample_sum);
  }
}

std::string_view type_name(prometheus::MetricType type, bool openmetrics) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    default:
      return openmetrics ? "unknown" : "untyped";
  }
}

constexpr std::string_view kTotal = "_total";

// The name and type a family is declared with in OpenMetrics: a counter's family name is its
// samples' without _total; a counter whose samples lack the suffix is declared unknown, so
// that its series keep their name whatever the format.
std::pair<std::string_view, std::string_view> openmetrics_declaration(
    const prometheus::MetricFamily& family) {
  std::string_view name = family.name;
  if (family.type != prometheus::MetricType::Counter) {
    return {name, type_name(family.type, true)};
  }
  if (!name.ends_with(kTotal)) {
    return {name, "unknown"};
  }
  name.remove_suffix(kTotal.size());
  return {name, "counter"};
}

// EXEMPLARS: FAMILIES' exemplars, or nullptr.
std::string serialize(const std::vector<prometheus::MetricFamily>& families,
                      const Exposition* exemplars, bool openmetrics) {
  // Room for every line at about 128 bytes, so the text is not moved as it grows.
  std::size_t lines = 0;
  for (const auto& family : families) {
    for (const auto& metric : family.metric) {
      switch (family.type) {
        case prometheus::MetricType::Histogram:
          lines += metric.histogram.bucket.size() + 3;
          break;
        case prometheus::MetricType::Summary:
          lines += metric.summary.quantile.size() + 2;
          break;
        default:
          lines += 1;
      }
    }
  }
  std::string out;
  out.reserve(lines * 128);
  TextWriter w(out, openmetrics);
  for (std::size_t fi = 0; fi < families.size(); ++fi) {
    const auto& family = families[fi];
    const auto [name, type] =
        openmetrics ? openmetrics_declaration(family)
                    : std::pair{std::string_view(family.name), type_name(family.type, false)};
    if (!family.help.empty()) {
      w.text("# HELP ");
      w.text(name);
      w.text(" ");
      w.help(family.help);
      w.text("\n");
    }
    w.text("# TYPE ");
    w.text(name);
    w.text(" ");
    w.text(type);
    w.text("\n");
    for (std::size_t mi = 0; mi < family.metric.size(); ++mi) {
      const auto& metric = family.metric[mi];
      w.begin_metric(metric);
      switch (family.type) {
        case prometheus::MetricType::Histogram:
          histogram(w, family, metric, openmetrics,
                    exemplars != nullptr ? exemplars->exemplar(fi, mi) : nullptr);
          break;
        case prometheus::MetricType::Summary:
          summary(w, family, metric, openmetrics);
          break;
        default:
          w.head(family);
          w.number(family.type == prometheus::MetricType::Counter ? metric.counter.value
                   : family.type == prometheus::MetricType::Gauge ? metric.gauge.value
                                                                  : metric.untyped.value);
          w.tail(metric);
      }
    }
  }
  if (openmetrics) {
    w.text("# EOF\n");
  }
  return out;
}

}  // namespace

std::string serialize_text(const std::vector<prometheus::MetricFamily>& families) {
  return serialize(families, nullptr, false);
}

std::string serialize_openmetrics(const Exposition& exposition) {
  return serialize(exposition.families, &exposition, true);
}

}  // namespace cephscope
