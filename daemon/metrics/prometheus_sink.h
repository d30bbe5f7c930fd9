// Collects one scrape's metric families for prometheus-cpp's text serialiser. The series cap
// protects the endpoint (and the Prometheus behind it) from a cardinality blow-up: series
// beyond it are left out and counted, never silently.
#pragma once

#include <prometheus/metric_family.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "collectors/metric_sink.h"
#include "core/labels.h"

namespace cephscope {

class PrometheusSink final : public MetricSink {
 public:
  explicit PrometheusSink(std::size_t max_series) : max_series_(max_series) {}

  void counter(const std::string& name, const std::string& help, const Labels& labels,
               double value) override;
  void gauge(const std::string& name, const std::string& help, const Labels& labels,
             double value) override;
  void histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const struct hist& h) override;

  // Self-metrics bypass the cap: they must always be there to explain what was cut.
  void set_uncapped(bool uncapped) { uncapped_ = uncapped; }

  [[nodiscard]] std::size_t series() const { return series_; }
  [[nodiscard]] std::size_t dropped() const { return dropped_; }
  std::vector<prometheus::MetricFamily> take();

 private:
  prometheus::MetricFamily& family(const std::string& name, const std::string& help,
                                   prometheus::MetricType type);
  bool admit(std::size_t series);

  std::size_t max_series_;
  bool uncapped_ = false;
  std::size_t series_ = 0;
  std::size_t dropped_ = 0;
  std::vector<prometheus::MetricFamily> families_;
  std::map<std::string, std::size_t> index_;
};

prometheus::ClientMetric metric_with(const Labels& labels);

}  // namespace cephscope
