// libbpf attaches tracepoints and uprobes by event id, read from tracefs; a fresh host may
// not have it mounted.
#pragma once

#include <string>

#include "core/result.h"

namespace cephscope {

inline constexpr const char* kTracefsDir = "/sys/kernel/tracing";

// Returns the tracefs directory, mounting it first when allowed and missing.
Result<std::string> ensure_tracefs(bool may_mount);

}  // namespace cephscope
