#pragma once

#include "collectors/collector.h"

namespace cephscope {

// Per-op stage latency in ceph-osd: uprobes attached per OSD process (sync_targets).
std::unique_ptr<Collector> make_osd_collector(const CollectorContext& ctx);

}  // namespace cephscope
