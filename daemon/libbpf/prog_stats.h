// Run time and run count of a loaded BPF program, counted by the kernel when
// kernel.bpf_stats_enabled=1; exported so operators see the probes' own cost.
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>

#include "core/result.h"

namespace cephscope {

struct ProgramStats {
  std::uint64_t run_time_ns = 0;
  std::uint64_t run_count = 0;
  // Runs the kernel skipped because a BPF program was already running on the CPU
  // (bpf_prog_info.recursion_misses, counted whatever bpf_stats_enabled says).
  std::uint64_t misses = 0;
};

// For a loaded program; kNotFound for one that was not loaded.
Result<ProgramStats> program_stats(const bpf_program* prog);

}  // namespace cephscope
