// The tracked-process filter the collectors share (bpf/targets.bpf.h): the tgid -> target id
// hash that holds every tracked process, and the array of packed slots that answers for most
// tgids with one read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "bpf/cephscope.h"

namespace cephscope {

struct TrackedMaps {
  int tgids = -1;  // BPF hash: tgid -> target id (-1: none, for tests without BPF)
  int slots = -1;  // BPF array: slot -> packed word
};

constexpr std::uint32_t tracked_slot(pid_t pid) {
  return static_cast<std::uint32_t>(pid) & (CEPHSCOPE_TRACKED_SLOTS - 1);
}

// The word of one slot, from the tracked processes (pid, target id) that map to it: the
// lowest pid holds the slot; any other one makes it shared (the BPF side then asks the hash).
std::uint64_t slot_word(const std::vector<std::pair<pid_t, std::uint32_t>>& in_slot);

}  // namespace cephscope
