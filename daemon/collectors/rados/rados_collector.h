#pragma once

#include "collectors/collector.h"

namespace cephscope {

// Client-observed op latency in librados clients: uprobes on the Objecter of each client
// process (sync_targets). See docs/collectors/rados.md.
std::unique_ptr<Collector> make_rados_collector(const CollectorContext& ctx);

}  // namespace cephscope
