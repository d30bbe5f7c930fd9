// The io_done call site. The OSD stage collector probes the call that logs one BlueStore state
// (log_state_latency(txc, logger, l_bluestore_state_io_done_lat)) because the state's end is
// stamped nowhere else; the calls differ only by the counter id moved into ecx just before
// them, which the resolver records with each call (profile::CallSite).
#pragma once

#include <vector>

#include "core/result.h"
#include "profile/profile.h"

namespace cephscope::osd {

// The call logging the third of a run of consecutive counter ids, where the smallest id among
// CALLS starts the run (BlueStore::_txc_state_proc logs prepare, aio_wait, io_done in that
// order of ids, and only later states after them). An error when the run is not there or the
// third id is called more than once.
Result<profile::CallSite> third_state_call(const std::vector<profile::CallSite>& calls);

}  // namespace cephscope::osd
