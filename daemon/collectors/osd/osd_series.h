// One OSD series (bpf/osd.h, struct osd_stats: an OSD's client ops of one op class, or its
// replicated writes) summed in user space and written out as metrics.
#pragma once

#include "bpf/osd.h"
#include "collectors/metric_sink.h"
#include "core/hist.h"
#include "core/labels.h"

namespace cephscope {

// Adds one CPU's (or one kept) copy of a series to INTO.
void add_stats(osd_stats& into, const osd_stats& from);

// The series' metrics under the OSD's TARGET labels: the whole op (WHOLE buckets), its bytes
// per layer, and each stage measured for it so far (STAGE buckets) with its slow-op count.
void put_osd_series(MetricSink& out, const Labels& target, int kind, int op, const osd_stats& s,
                    Buckets whole, Buckets stage);

}  // namespace cephscope
