#include "collectors/rados/rados_series.h"

#include "collectors/exemplars.h"
#include "collectors/rados/rados_probes.h"
#include "core/hist.h"
#include "core/label_value.h"

namespace cephscope::rados {

void add_stats(rados_stats& into, const rados_stats& from) {
  add_hist(into.latency, from.latency);
  into.bytes += from.bytes;
  into.resends += from.resends;
  for (int e = 0; e < RADOS_ERR_COUNT; ++e) {
    into.errors[e] += from.errors[e];
  }
}

void put_client_series(MetricSink& out, const Labels& target, const ClientSeries& series,
                       const rados_stats& s, Buckets buckets, const SlowOp* exemplar) {
  // The daemon learns no pool names (docs/collectors/rados.md): pool is the id, as it stays
  // for the series' life.
  const std::string id =
      series.pool == RADOS_POOL_UNKNOWN ? "unknown" : std::to_string(series.pool);
  Labels l = target;
  if (!series.image.empty()) {
    l = l + Labels{{"image", label_value(series.image)}};
  } else if (series.pid != 0) {
    l = l + Labels{{"pid", std::to_string(series.pid)}};
  }
  l = l + Labels{{"pool", id}, {"pool_id", id}, {"op", kOps.at(series.op)}};
  const auto op_exemplar = exemplar != nullptr ? exemplar_of(*exemplar) : std::nullopt;
  out.histogram("cephscope_client_op_seconds",
                "librados client ops as the client sees them: first send -> finish.", l, s.latency,
                buckets, op_exemplar ? &*op_exemplar : nullptr);
  out.counter("cephscope_client_op_resends_total",
              "Sends of client ops after their first (new OSD map, -EAGAIN, redirect).", l,
              static_cast<double>(s.resends));
  for (int e = 0; e < RADOS_ERR_COUNT; ++e) {
    if (s.errors[e] != 0) {
      out.counter("cephscope_client_op_errors_total",
                  "Client ops that finished with an error, by class.",
                  l + Labels{{"class", kErrorClasses.at(e)}}, static_cast<double>(s.errors[e]));
    }
  }
}

void put_client_bytes(MetricSink& out, const Labels& target, bool read, std::uint64_t bytes) {
  out.counter("cephscope_layer_bytes_total", "Bytes seen at each layer of the IO path, per target.",
              target + Labels{{"layer", "client"}, {"direction", read ? "read" : "write"}},
              static_cast<double>(bytes));
}

}  // namespace cephscope::rados
