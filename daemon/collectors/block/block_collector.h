#pragma once

#include "collectors/collector.h"

namespace cephscope {

std::unique_ptr<Collector> make_block_collector(const CollectorContext& ctx);

}  // namespace cephscope
