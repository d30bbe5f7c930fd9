#include "collectors/marker_args.h"

#include <sys/user.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string>

namespace cephscope {
namespace {

// Where the uprobe's struct pt_regs keeps each register, by DWARF number (x86-64). The user
// view of the registers (user_regs_struct) has the kernel's pt_regs order and size.
std::optional<std::uint32_t> pt_regs_offset(int dwarf_reg) {
#if defined(__x86_64__)
  static constexpr std::array<std::size_t, 16> kOffsets = {
      offsetof(user_regs_struct, rax), offsetof(user_regs_struct, rdx),
      offsetof(user_regs_struct, rcx), offsetof(user_regs_struct, rbx),
      offsetof(user_regs_struct, rsi), offsetof(user_regs_struct, rdi),
      offsetof(user_regs_struct, rbp), offsetof(user_regs_struct, rsp),
      offsetof(user_regs_struct, r8),  offsetof(user_regs_struct, r9),
      offsetof(user_regs_struct, r10), offsetof(user_regs_struct, r11),
      offsetof(user_regs_struct, r12), offsetof(user_regs_struct, r13),
      offsetof(user_regs_struct, r14), offsetof(user_regs_struct, r15)};
  if (dwarf_reg >= 0 && static_cast<std::size_t>(dwarf_reg) < kOffsets.size()) {
    return static_cast<std::uint32_t>(kOffsets[static_cast<std::size_t>(dwarf_reg)]);
  }
#endif
  (void)dwarf_reg;
  return std::nullopt;
}

}  // namespace

Result<usdt_key_spec> marker_arg_spec(const profile::Marker& m, unsigned n) {
  usdt_key_spec k{};
  if (n == 0) {
    return k;  // USDT_KEY_THREAD
  }
  if (!m.args_error.empty()) {
    return make_error(ErrorKind::kUnsupported, "its arguments: " + m.args_error);
  }
  if (n > m.args.size()) {
    return make_error(ErrorKind::kNotFound, "it has " + std::to_string(m.args.size()) +
                                                " arguments, not " + std::to_string(n));
  }
  const profile::MarkerArg& a = m.args[n - 1];
  k.size = a.size;
  k.is_signed = a.is_signed ? 1 : 0;
  k.value = a.value;
  if (a.kind == profile::MarkerArg::Kind::kConstant) {
    k.kind = USDT_KEY_CONSTANT;
    return k;
  }
  const auto off = pt_regs_offset(a.dwarf_reg);
  if (!off) {
    return make_error(ErrorKind::kUnsupported, "its registers are read on x86-64 only");
  }
  k.kind = a.kind == profile::MarkerArg::Kind::kRegister ? USDT_KEY_REGISTER : USDT_KEY_MEMORY;
  k.reg_off = *off;
  return k;
}

}  // namespace cephscope
