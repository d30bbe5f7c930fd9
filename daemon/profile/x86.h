// The one reader of machine code (capstone, x86-64): the kind of a function's first
// instruction and its direct calls, for the resolver; instruction boundaries, for the
// verifier of probe offsets (verify.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "profile/profile.h"

namespace cephscope::profile {

class X86Decoder {
 public:
  static Result<X86Decoder> open();

  X86Decoder(X86Decoder&&) noexcept;
  X86Decoder& operator=(X86Decoder&&) noexcept;
  X86Decoder(const X86Decoder&) = delete;
  X86Decoder& operator=(const X86Decoder&) = delete;
  ~X86Decoder();

  // "push", "branch", "nop", "endbr64", "ret" or "other" ("" when CODE starts with no valid
  // instruction). The kernel emulates a push of a register, relative jumps and calls and nops
  // under a uprobe, and single-steps the rest (5-6x the cost per hit).
  [[nodiscard]] std::string_view entry_kind(std::span<const std::uint8_t> code) const;

  // Every direct call to CALLEE in CODE, the bytes of a function at VADDR and FILE_OFFSET,
  // with the constant moved into ecx in its argument set-up (the 24 bytes before it), if any,
  // and the callee-saved register that keeps its rsi (CallSite::rsi_saved_in). Decoding stops
  // at the first invalid instruction.
  [[nodiscard]] std::vector<CallSite> calls_to(std::span<const std::uint8_t> code,
                                               std::uint64_t vaddr, std::uint64_t file_offset,
                                               std::uint64_t callee) const;

  // Whether an instruction starts DISTANCE bytes into CODE, decoding from its first byte; the
  // error says where decoding failed or that DISTANCE falls inside an instruction.
  [[nodiscard]] Status boundary(std::span<const std::uint8_t> code, std::uint64_t vaddr,
                                std::uint64_t distance) const;

 private:
  struct Handle;
  explicit X86Decoder(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
};

}  // namespace cephscope::profile
