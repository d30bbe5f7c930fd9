#pragma once

#include <memory>

#include "collectors/collector.h"

namespace cephscope {

// Static markers (USDT) of the programs the config's usdt: rules name, counted and timed in
// the kernel: one uprobe per marker site, attached per process (sync_targets). See
// docs/collectors/usdt.md.
std::unique_ptr<Collector> make_usdt_collector(const CollectorContext& ctx);

}  // namespace cephscope
