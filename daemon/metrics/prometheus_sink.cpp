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

std::size_t PrometheusSink::family(const std::string& name, const std::string& help,
                                   prometheus::MetricType type) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    return it->second;
  }
  index_.emplace(name, families_.size());
  families_.push_back(prometheus::MetricFamily{name, help, type, {}});
  return families_.size() - 1;
}

void PrometheusSink::add(std::size_t family, prometheus::ClientMetric metric, std::size_t series) {
  if (capped_) {
    series_ += series;
    families_[family].metric.push_back(std::move(metric));
    return;
  }
  pending_.push_back({family, std::move(metric), series, priority_, source_});
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
      families_[pending_[i].family].metric.push_back(std::move(pending_[i].metric));
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
                               const Labels& labels, const struct hist& h, Buckets buckets) {
  auto m = metric_with(labels);
  m.histogram = to_prometheus(h, buckets);
  const std::size_t series = m.histogram.bucket.size() + 2;  // the buckets, _sum and _count
  add(family(name, help, prometheus::MetricType::Histogram), std::move(m), series);
}

std::vector<prometheus::MetricFamily> PrometheusSink::take() {
  apply_cap();
  index_.clear();
  // A family whose every series was left out is not written at all.
  std::erase_if(families_, [](const prometheus::MetricFamily& f) { return f.metric.empty(); });
  return std::move(families_);
}

}  // namespace cephscope
