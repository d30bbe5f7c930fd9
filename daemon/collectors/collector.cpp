#include "collectors/collector.h"

namespace cephscope {

Status Collector::scrape(MetricSink& out, const TargetLabelMap& targets) {
  std::lock_guard lock(maps_mu_);
  return collect(out, targets);
}

void Collector::prune(const TargetIds& live) {
  std::lock_guard lock(maps_mu_);
  prune_maps(live);
}

}  // namespace cephscope
