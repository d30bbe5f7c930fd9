#pragma once

#include "collectors/collector.h"

namespace cephscope {

std::unique_ptr<Collector> make_syscall_collector(const CollectorContext& ctx);

// Name of a syscall class as used in the `syscall` label; nullptr when out of range.
const char* syscall_name(unsigned index);

}  // namespace cephscope
