// One scrape's metric families as the serialisers take them, with the exemplars some
// histograms carry (the OpenMetrics and protobuf expositions write them; the plain text
// format has no place for them).
#pragma once

#include <prometheus/metric_family.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "collectors/metric_sink.h"

namespace cephscope {

struct Exposition {
  std::vector<prometheus::MetricFamily> families;
  // exemplars[f][m] belongs to families[f].metric[m]; empty vectors mean none at all
  std::vector<std::vector<std::optional<Exemplar>>> exemplars;

  [[nodiscard]] const Exemplar* exemplar(std::size_t family, std::size_t metric) const {
    if (family >= exemplars.size() || metric >= exemplars[family].size() ||
        !exemplars[family][metric]) {
      return nullptr;
    }
    return &*exemplars[family][metric];
  }
};

// The index of the bucket of HISTOGRAM that VALUE falls into (the first whose upper bound is
// not below it), or the histogram's bucket count when none is (no +Inf bucket).
std::size_t exemplar_bucket(const prometheus::ClientMetric::Histogram& histogram, double value);

}  // namespace cephscope
