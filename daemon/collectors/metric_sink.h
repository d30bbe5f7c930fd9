// What a collector writes one scrape into. An interface, so that collectors sit below
// metrics/: the series cap and the Prometheus families are metrics/prometheus_sink.h's.
#pragma once

#include <string>

#include "bpf/histogram.h"
#include "core/hist.h"
#include "core/labels.h"

namespace cephscope {

// One op that fell into a histogram, for the bucket its value is in: the exemplar Prometheus
// keeps beside the series (OpenMetrics and protobuf expositions only).
struct Exemplar {
  std::string trace_id;  // 32 hex digits: /debug/slow-ops?trace_id= finds the op
  double value = 0;      // seconds, as the histogram counts them
  double timestamp = 0;  // seconds since the epoch, when the op ended
};

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
  // the classic buckets of `buckets`, and an op that fell into it, when one is known.
  virtual void histogram(const std::string& name, const std::string& help, const Labels& labels,
                         const struct hist& h, Buckets buckets = Buckets::kFull,
                         const Exemplar* exemplar = nullptr) = 0;
};

}  // namespace cephscope
