// A static marker's argument as the usdt and rados programs read it at a hit (bpf/marker_args.h):
// the decoded spec of profile/markers.h turned into a register's place in struct pt_regs.
#pragma once

#include "bpf/marker_args.h"
#include "core/result.h"
#include "profile/markers.h"

namespace cephscope {

// The spec of argument N (from 1) of marker M, or why it cannot be read; N 0 is the thread.
Result<usdt_key_spec> marker_arg_spec(const profile::Marker& m, unsigned n);

}  // namespace cephscope
