// Prometheus' text exposition (format 0.0.4), written straight into one string: the same
// bytes as prometheus-cpp's TextSerializer (values as printf's %.16g), without an ostream's
// per-call cost, which was half of a scrape's CPU at a few thousand series. And OpenMetrics
// 1.0 (application/openmetrics-text), which Prometheus asks for first: the same series under
// the same names (a counter's family declared without _total), histograms with exemplars.
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "metrics/exposition.h"

namespace cephscope {

std::string serialize_text(const std::vector<prometheus::MetricFamily>& families);
std::string serialize_openmetrics(const Exposition& exposition);

}  // namespace cephscope
