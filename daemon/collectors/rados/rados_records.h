// The rados programs' slow client-op records (bpf/rados.h, struct rados_slow_record) as the
// endpoint shows them: the op, its pool, PG and acting OSD, its request id and trace id.
#pragma once

#include <string>

#include "bpf/rados.h"
#include "collectors/slow_ops.h"

namespace cephscope::rados {

// A record of process PROCESS (its comm) as a slow op of kind "client".
SlowOp to_slow_op(const rados_slow_record& r, const std::string& process);

}  // namespace cephscope::rados
