// One OSD series (bpf/osd.h, struct osd_stats: an OSD's client ops of one op class, or its
// replicated writes) summed in user space and written out as metrics.
#pragma once

#include <cstdint>

#include "bpf/osd.h"
#include "collectors/metric_sink.h"
#include "collectors/slow_ops.h"
#include "core/hist.h"
#include "core/labels.h"

namespace cephscope {

// Adds one CPU's (or one kept) copy of a series to INTO.
void add_stats(osd_stats& into, const osd_stats& from);

// STAGE's histogram (OSD_STAGE_WHOLE: the whole op's) out of the series' split layout.
struct hist stage_hist(const osd_stats& s, int stage);

// Folds into the series: every fold counts the whole op once.
std::uint64_t folds(const osd_stats& s);

// The series' metrics under the OSD's TARGET labels: the whole op (WHOLE buckets) and each
// stage measured for it so far (STAGE buckets) with its slow-op count;
// EXEMPLAR, when known, is its slowest op of the interval, the exemplar of each histogram.
void put_osd_series(MetricSink& out, const Labels& target, int kind, int op, const osd_stats& s,
                    Buckets whole, Buckets stage, const SlowOp* exemplar = nullptr);

// An OSD's bytes at its layer (osd_op for client ops, replica for sub-ops), summed over the op
// classes of KIND: one series per target, layer and direction.
void put_layer_bytes(MetricSink& out, const Labels& target, int kind, std::uint64_t bytes_in,
                     std::uint64_t bytes_out);

}  // namespace cephscope
