// What a collector writes one scrape into. An interface, so that collectors sit below
// metrics/: the series cap and the Prometheus families are metrics/prometheus_sink.h's.
#pragma once

#include <string>

#include "bpf/histogram.h"
#include "core/hist.h"
#include "core/labels.h"

namespace cephscope {

class MetricSink {
 public:
  MetricSink() = default;
  MetricSink(const MetricSink&) = delete;
  MetricSink& operator=(const MetricSink&) = delete;
  virtual ~MetricSink() = default;

  virtual void counter(const std::string& name, const std::string& help, const Labels& labels,
                       double value) = 0;
  virtual void gauge(const std::string& name, const std::string& help, const Labels& labels,
                     double value) = 0;
  // A histogram as the kernel folds it: log2 slots and the sum in nanoseconds, exported with
  // the classic buckets of `buckets`.
  virtual void histogram(const std::string& name, const std::string& help, const Labels& labels,
                         const struct hist& h, Buckets buckets = Buckets::kFull) = 0;
};

}  // namespace cephscope
