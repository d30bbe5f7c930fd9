#include "collectors/osd/osd_series.h"

#include <algorithm>
#include <array>
#include <iterator>

#include "collectors/exemplars.h"
#include "collectors/osd/osd_probes.h"

namespace cephscope {
namespace {

constexpr std::array<const char*, OSD_OP_COUNT> kOps = {"read", "write", "other"};

}  // namespace

void add_stats(osd_stats& into, const osd_stats& from) {
  for (int i = 0; i <= OSD_STAGE_WHOLE; ++i) {
    add_slots(into.slots[i], from.slots[i]);
    into.sum_ns[i] += from.sum_ns[i];
    into.slow[i] += from.slow[i];
  }
  into.bytes_in += from.bytes_in;
  into.bytes_out += from.bytes_out;
}

struct hist stage_hist(const osd_stats& s, int stage) {
  struct hist h {};
  std::copy(std::begin(s.slots[stage]), std::end(s.slots[stage]), std::begin(h.slots));
  h.sum_ns = s.sum_ns[stage];
  return h;
}

std::uint64_t folds(const osd_stats& s) {
  return slots_count(s.slots[OSD_STAGE_WHOLE]);
}

void put_osd_series(MetricSink& out, const Labels& target, int kind, int op, const osd_stats& s,
                    Buckets whole, Buckets stage, const SlowOp* exemplar) {
  const bool subop = kind == OSD_KIND_SUBOP;
  const Labels l = subop ? target : target + Labels{{"op", kOps.at(op)}};
  const auto example = [&](std::string_view stage_name) {
    return exemplar != nullptr ? exemplar_of(*exemplar, stage_name) : std::nullopt;
  };
  const auto of_whole = example({});
  const Exemplar* whole_exemplar = of_whole ? &*of_whole : nullptr;
  if (subop) {
    out.histogram("cephscope_osd_subop_seconds",
                  "Replicated writes received from a primary: MOSDRepOp received -> local "
                  "commit (Ceph's subop_w_latency).",
                  l, stage_hist(s, OSD_STAGE_WHOLE), whole, whole_exemplar);
  } else {
    out.histogram("cephscope_osd_op_seconds",
                  "Client ops on their primary OSD: message received -> reply (Ceph's "
                  "op_r/op_w_latency).",
                  l, stage_hist(s, OSD_STAGE_WHOLE), whole, whole_exemplar);
  }
  // a stage's series exist once it has been measured for this kind of op
  for (int i = 0; i < OSD_STAGE_COUNT; ++i) {
    const struct hist h = stage_hist(s, i);
    if (hist_count(h) == 0 && s.slow[i] == 0) {
      continue;
    }
    const Labels ls = l + Labels{{"stage", osd::kStages.at(i)}};
    const auto of_stage = example(osd::kStages.at(i));
    out.histogram(subop ? "cephscope_osd_subop_stage_seconds" : "cephscope_osd_op_stage_seconds",
                  "Time an OSD op spent in each stage (see docs/collectors/osd.md).", ls, h, stage,
                  of_stage ? &*of_stage : nullptr);
    if (!subop) {
      out.counter("cephscope_osd_slow_ops_total",
                  "Client ops over the slow-op threshold, by the stage that took longest.", ls,
                  static_cast<double>(s.slow[i]));
    }
  }
}

void put_layer_bytes(MetricSink& out, const Labels& target, int kind, std::uint64_t bytes_in,
                     std::uint64_t bytes_out) {
  const bool subop = kind == OSD_KIND_SUBOP;
  const Labels layer = target + Labels{{"layer", subop ? "replica" : "osd_op"}};
  const char* help = "Bytes seen at each layer of the IO path, per target.";
  out.counter("cephscope_layer_bytes_total", help, layer + Labels{{"direction", "write"}},
              static_cast<double>(bytes_in));
  if (!subop) {
    out.counter("cephscope_layer_bytes_total", help, layer + Labels{{"direction", "read"}},
                static_cast<double>(bytes_out));
  }
}

}  // namespace cephscope
