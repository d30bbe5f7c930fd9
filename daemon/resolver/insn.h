// The kind of instruction at a function entry (x86-64). The kernel emulates a few kinds of
// instructions under a uprobe (push, jumps and calls, nops) and single-steps the rest, which
// costs 5-6x more per hit; the daemon uses this to pick probe points.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace cephscope::profile {

// "push", "branch", "nop", "endbr64", "ret" or "other" ("" when no bytes).
std::string_view entry_insn_kind(std::span<const uint8_t> code);

}  // namespace cephscope::profile
