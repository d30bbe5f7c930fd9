// Prometheus' protobuf exposition (io.prometheus.client.MetricFamily, length-delimited), for
// scrapers that ask for it: Prometheus with native histograms enabled. Every histogram is sent
// in both forms: its classic buckets, and a native (exponential, schema 0) histogram built
// from the same slots. The slots' bounds are 1 us * 2^k, which no native schema matches: slot k,
// (2^(k-1), 2^k] us, is sent as native bucket k-20, (2^(k-21), 2^(k-20)] s, whose bounds lie
// 4.6% below the slot's (2^20 s / 10^6 = 1.048576 s); the overflow slot (> 16.8 s) is sent
// as (16 s, 32 s]. Quantiles of the two forms so differ by up to 4.6% plus interpolation.
// A histogram exported with coarse buckets (every other slot) goes as schema -1 the same way;
// one with +Inf alone has no native form. Exemplars go on their classic bucket (Prometheus
// keeps them for the native form too).
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "metrics/exposition.h"

namespace cephscope {

// The native bucket index (schema 0) the kernel's slot SLOT is sent as.
int native_bucket_index(std::size_t slot);

std::string serialize_protobuf(const Exposition& exposition);
inline std::string serialize_protobuf(std::vector<prometheus::MetricFamily> families) {
  return serialize_protobuf(Exposition{std::move(families), {}});
}

}  // namespace cephscope
