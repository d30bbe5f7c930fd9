// Collects one scrape's metric families for prometheus-cpp's text serialiser. The series cap
// protects the endpoint (and the Prometheus behind it) from a cardinality blow-up: series
// beyond it are left out and counted, never silently, the least valuable first: series wait
// until the cap is applied, then are admitted by priority (lower first; the exporter gives the
// OSD collector's the lowest), and within one priority in the order they came.
#pragma once

#include <prometheus/metric_family.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/metric_sink.h"
#include "core/labels.h"
#include "metrics/exposition.h"

namespace cephscope {

class PrometheusSink final : public MetricSink {
 public:
  explicit PrometheusSink(std::size_t max_series) : max_series_(max_series) {}

  void counter(const std::string& name, const std::string& help, const Labels& labels,
               double value) override;
  void gauge(const std::string& name, const std::string& help, const Labels& labels,
             double value) override;
  void histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const struct hist& h, Buckets buckets = Buckets::kFull,
                 const Exemplar* exemplar = nullptr) override;

  // Where the series that follow come from (a collector's name), and their priority (0 is
  // kept first).
  void set_source(const std::string& source, int priority);
  // Decides which series stay; later series bypass the cap. Self-metrics come after it: they
  // must always be there to explain what was cut, dropped() included.
  void apply_cap();

  [[nodiscard]] std::size_t series() const { return series_; }
  [[nodiscard]] std::size_t dropped() const { return dropped_; }
  // Series kept and left out per source, once the cap is applied.
  [[nodiscard]] const std::map<std::string, std::size_t>& kept_by_source() const { return kept_; }
  [[nodiscard]] const std::map<std::string, std::size_t>& dropped_by_source() const {
    return dropped_by_;
  }
  std::vector<prometheus::MetricFamily> take() { return take_exposition().families; }
  // The families with their exemplars.
  Exposition take_exposition();

 private:
  struct Pending {
    std::size_t family;
    prometheus::ClientMetric metric;
    std::optional<Exemplar> exemplar;
    std::size_t series;
    int priority;
    std::string source;
  };

  std::size_t family(const std::string& name, const std::string& help, prometheus::MetricType type);
  void add(std::size_t family, prometheus::ClientMetric metric, std::size_t series,
           std::optional<Exemplar> exemplar = std::nullopt);
  void admit(std::size_t family, prometheus::ClientMetric metric, std::optional<Exemplar> exemplar);

  std::size_t max_series_;
  int priority_ = 0;
  std::string source_;
  bool capped_ = false;  // apply_cap() ran: series go straight in
  std::size_t series_ = 0;
  std::size_t dropped_ = 0;
  std::vector<prometheus::MetricFamily> families_;
  std::vector<std::vector<std::optional<Exemplar>>> exemplars_;  // by family, by metric
  std::map<std::string, std::size_t> index_;
  std::vector<Pending> pending_;
  std::map<std::string, std::size_t> kept_;
  std::map<std::string, std::size_t> dropped_by_;
};

prometheus::ClientMetric metric_with(const Labels& labels);

}  // namespace cephscope
