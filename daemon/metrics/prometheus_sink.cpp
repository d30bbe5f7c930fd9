#include "metrics/prometheus_sink.h"

#include <algorithm>

#include "core/label_value.h"
#include "metrics/histogram.h"

namespace cephscope {

prometheus::ClientMetric metric_with(const Labels& labels) {
  prometheus::ClientMetric m;
  m.label.reserve(labels.size());
  for (const auto& [name, value] : labels) {
    if (!value.empty()) {  // an empty label is the same as no label in Prometheus
      // Every value, whatever its source: valid UTF-8, bounded; the serialiser escapes it.
      m.label.push_back({name, label_value(value)});
    }
  }
  return m;
}

std::size_t exemplar_bucket(const prometheus::ClientMetric::Histogram& histogram, double value) {
  const auto& b = histogram.bucket;
  return static_cast<std::size_t>(
      std::find_if(b.begin(), b.end(), [value](const auto& x) { return value <= x.upper_bound; }) -
      b.begin());
}

std::size_t PrometheusSink::family(const std::string& name, const std::string& help,
                                   prometheus::MetricType type) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    return it->second;
  }
  index_.emplace(name, families_.size());
  families_.push_back(prometheus::MetricFamily{name, help, type, {}});
  exemplars_.emplace_back();
  return families_.size() - 1;
}

void PrometheusSink::admit(std::size_t family, prometheus::ClientMetric metric,
                           std::optional<Exemplar> exemplar) {
  families_[family].metric.push_back(std::move(metric));
  exemplars_[family].push_back(std::move(exemplar));
}

void PrometheusSink::add(std::size_t family, prometheus::ClientMetric metric, std::size_t series,
                         std::optional<Exemplar> exemplar) {
  if (capped_) {
    series_ += series;
    admit(family, std::move(metric), std::move(exemplar));
    return;
  }
  pending_.push_back({family, std::move(metric), std::move(exemplar), series, priority_, source_});
}

void PrometheusSink::set_source(const std::string& source, int priority) {
  source_ = source;
  priority_ = priority;
  kept_.try_emplace(source, 0);  // a source with no series says so: 0
}

void PrometheusSink::apply_cap() {
  if (capped_) {
    return;
  }
  capped_ = true;
  std::vector<std::size_t> order(pending_.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return pending_[a].priority < pending_[b].priority;
  });
  std::vector<bool> admitted(pending_.size(), false);
  for (const std::size_t i : order) {
    const Pending& p = pending_[i];
    if (series_ + p.series > max_series_) {
      dropped_ += p.series;
      dropped_by_[p.source] += p.series;
      continue;
    }
    series_ += p.series;
    kept_[p.source] += p.series;
    admitted[i] = true;
  }
  // In the order they came, so each family's series keep theirs.
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (admitted[i]) {
      admit(pending_[i].family, std::move(pending_[i].metric), std::move(pending_[i].exemplar));
    }
  }
  pending_.clear();
}

void PrometheusSink::counter(const std::string& name, const std::string& help, const Labels& labels,
                             double value) {
  auto m = metric_with(labels);
  m.counter.value = value;
  add(family(name, help, prometheus::MetricType::Counter), std::move(m), 1);
}

void PrometheusSink::gauge(const std::string& name, const std::string& help, const Labels& labels,
                           double value) {
  auto m = metric_with(labels);
  m.gauge.value = value;
  add(family(name, help, prometheus::MetricType::Gauge), std::move(m), 1);
}

void PrometheusSink::histogram(const std::string& name, const std::string& help,
                               const Labels& labels, const struct hist& h, Buckets buckets,
                               const Exemplar* exemplar) {
  auto m = metric_with(labels);
  m.histogram = to_prometheus(h, buckets);
  const std::size_t series = m.histogram.bucket.size() + 2;  // the buckets, _sum and _count
  std::optional<Exemplar> kept;
  // Only an op the histogram has counted: one from before a reset, or from a series the
  // histogram has not read yet, would point at an empty bucket.
  if (exemplar != nullptr) {
    const std::size_t b = exemplar_bucket(m.histogram, exemplar->value);
    const auto below = b == 0 ? 0 : m.histogram.bucket[b - 1].cumulative_count;
    if (b < m.histogram.bucket.size() && m.histogram.bucket[b].cumulative_count > below) {
      kept = *exemplar;
    }
  }
  add(family(name, help, prometheus::MetricType::Histogram), std::move(m), series, std::move(kept));
}

Exposition PrometheusSink::take_exposition() {
  apply_cap();
  index_.clear();
  Exposition out;
  // A family whose every series was left out is not written at all.
  for (std::size_t f = 0; f < families_.size(); ++f) {
    if (!families_[f].metric.empty()) {
      out.families.push_back(std::move(families_[f]));
      out.exemplars.push_back(std::move(exemplars_[f]));
    }
  }
  families_.clear();
  exemplars_.clear();
  return out;
}

}  // namespace cephscope
