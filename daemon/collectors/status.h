// What a collector reports about itself besides its metrics: the outcome of each probe it
// tried to attach, and how full its maps are. Plain values, so that metrics/ and app/ read
// them without the kernel objects behind them.
#pragma once

#include <cstddef>
#include <string>

#include "core/reason.h"

namespace cephscope {

// Exported as cephscope_probe_attached{collector,probe,target,fsid,reason}: the reason's word is
// the label, its detail goes to the log and to --check.
struct ProbeStatus {
  std::string probe;
  std::string target;  // "" for probes that are not per target (tracepoints)
  bool attached = false;
  Cause why;           // ok, or why not
  std::string fsid{};  // the target's cluster, for Ceph daemons whose fsid is known
};

// Exported as cephscope_map_entries{map} and cephscope_map_capacity{map}.
struct MapUsage {
  std::string map;
  std::size_t entries;
  std::size_t capacity;
};

}  // namespace cephscope
