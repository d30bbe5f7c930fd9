#include "metrics/prometheus_sink.h"

#include "metrics/histogram.h"

namespace cephscope {

prometheus::ClientMetric metric_with(const Labels& labels) {
  prometheus::ClientMetric m;
  m.label.reserve(labels.size());
  for (const auto& [name, value] : labels) {
    if (!value.empty()) {  // an empty label is the same as no label in Prometheus
      m.label.push_back({name, value});
    }
  }
  return m;
}

prometheus::MetricFamily& PrometheusSink::family(const std::string& name, const std::string& help,
                                                 prometheus::MetricType type) {
  auto it = index_.find(name);
  if (it != index_.end()) {
    return families_[it->second];
  }
  index_.emplace(name, families_.size());
  families_.push_back(prometheus::MetricFamily{name, help, type, {}});
  return families_.back();
}

bool PrometheusSink::admit(std::size_t series) {
  if (!uncapped_ && series_ + series > max_series_) {
    dropped_ += series;
    return false;
  }
  series_ += series;
  return true;
}

void PrometheusSink::counter(const std::string& name, const std::string& help, const Labels& labels,
                             double value) {
  if (!admit(1)) {
    return;
  }
  auto m = metric_with(labels);
  m.counter.value = value;
  family(name, help, prometheus::MetricType::Counter).metric.push_back(std::move(m));
}

void PrometheusSink::gauge(const std::string& name, const std::string& help, const Labels& labels,
                           double value) {
  if (!admit(1)) {
    return;
  }
  auto m = metric_with(labels);
  m.gauge.value = value;
  family(name, help, prometheus::MetricType::Gauge).metric.push_back(std::move(m));
}

void PrometheusSink::histogram(const std::string& name, const std::string& help,
                               const Labels& labels, const struct hist& h) {
  if (!admit(HIST_SLOTS + 2)) {  // every bucket, _sum and _count
    return;
  }
  auto m = metric_with(labels);
  m.histogram = to_prometheus(h);
  family(name, help, prometheus::MetricType::Histogram).metric.push_back(std::move(m));
}

std::vector<prometheus::MetricFamily> PrometheusSink::take() {
  index_.clear();
  return std::move(families_);
}

}  // namespace cephscope
