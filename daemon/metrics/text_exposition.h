// Prometheus' text exposition (format 0.0.4), written straight into one string: the same
// bytes as prometheus-cpp's TextSerializer (values as printf's %.16g), without an ostream's
// per-call cost, which was half of a scrape's CPU at a few thousand series.
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace cephscope {

std::string serialize_text(const std::vector<prometheus::MetricFamily>& families);

}  // namespace cephscope
