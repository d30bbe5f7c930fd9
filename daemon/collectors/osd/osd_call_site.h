// Direct call sites inside one function (x86-64). The OSD stage collector probes the call
// that logs one BlueStore state (log_state_latency(txc, logger, l_bluestore_state_io_done_lat))
// because the state's end is stamped nowhere else; the calls differ only by the counter id
// moved into ecx just before them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/result.h"

namespace cephscope::osd {

struct CallSite {
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;     // what a uprobe takes
  std::optional<uint32_t> ecx;  // `mov $imm32, %ecx` shortly before the call, if any
};

// Every `call rel32` to CALLEE in CODE, the bytes of a function that starts at VADDR and
// FILE_OFFSET. A byte scan, not a disassembly: a match must also hit CALLEE exactly.
std::vector<CallSite> find_calls(std::span<const uint8_t> code, uint64_t vaddr,
                                 uint64_t file_offset, uint64_t callee);

// The call logging the third of a run of consecutive counter ids, where the smallest id among
// CALLS starts the run (BlueStore::_txc_state_proc logs prepare, aio_wait, io_done in that
// order of ids, and only later states after them). An error when the run is not there or the
// third id is called more than once.
Result<CallSite> third_state_call(const std::vector<CallSite>& calls);

}  // namespace cephscope::osd
