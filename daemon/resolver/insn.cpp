#include "resolver/insn.h"

namespace cephscope::profile {

std::string_view entry_insn_kind(std::span<const uint8_t> c) {
  if (c.empty()) {
    return "";
  }
  const uint8_t b0 = c[0];
  const uint8_t b1 = c.size() > 1 ? c[1] : 0;
  if (c.size() >= 4 && b0 == 0xf3 && b1 == 0x0f && c[2] == 0x1e && c[3] == 0xfa) {
    return "endbr64";
  }
  if ((b0 >= 0x50 && b0 <= 0x57) || (b0 == 0x41 && b1 >= 0x50 && b1 <= 0x57)) {
    return "push";  // push %reg, and push %r8-%r15 with a REX.B prefix
  }
  if (b0 == 0xe8 || b0 == 0xe9 || b0 == 0xeb || (b0 >= 0x70 && b0 <= 0x7f) ||
      (b0 == 0x0f && b1 >= 0x80 && b1 <= 0x8f)) {
    return "branch";
  }
  if (b0 == 0x90 || (b0 == 0x0f && b1 == 0x1f) || (b0 == 0x66 && (b1 == 0x90 || b1 == 0x0f))) {
    return "nop";
  }
  if (b0 == 0xc3 || (b0 == 0xf3 && b1 == 0xc3)) {
    return "ret";
  }
  return "other";
}

}  // namespace cephscope::profile
