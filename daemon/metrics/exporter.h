// One scrape: every collector's families, then the self-metrics that explain them
// (probe status, map usage, lost events, scrape cost, targets, build).
#pragma once

#include <prometheus/metric_family.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "discovery/registry.h"
#include "libbpf/features.h"
#include "metrics/exposition.h"

namespace cephscope {

class OtlpExporter;
class ProcessEvents;
class PrometheusSink;

class Exporter {
 public:
  Exporter(TargetRegistry& registry, const std::vector<std::unique_ptr<Collector>>& collectors,
           const ProcessEvents* events, const KernelFeatures& features)
      : registry_(registry), collectors_(collectors), events_(events), features_(features) {}

  void set_max_series(std::size_t n) { max_series_.store(n); }
  // Spans out: its counts join the self-metrics (nullptr: off).
  void set_traces(const OtlpExporter* traces) { traces_ = traces; }
  // The text exposition format; scrapes are serialised.
  std::string render();
  // OpenMetrics, with exemplars (text_exposition.h).
  std::string render_openmetrics();
  // The protobuf exposition, histograms also in their native form, with exemplars
  // (protobuf_exposition.h).
  std::string render_protobuf();

 private:
  Exposition collect();

  void self_metrics(PrometheusSink& out, const std::vector<TargetView>& targets,
                    const std::vector<std::pair<std::string, double>>& durations);

  std::mutex mu_;
  TargetRegistry& registry_;
  const std::vector<std::unique_ptr<Collector>>& collectors_;
  const ProcessEvents* events_;
  const KernelFeatures& features_;
  const OtlpExporter* traces_ = nullptr;
  std::atomic<std::size_t> max_series_{50'000};
};

}  // namespace cephscope
