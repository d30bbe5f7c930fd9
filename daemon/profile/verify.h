// Checking a probe offset against the binary it goes into. A profile resolved from debug
// files inside a target's container is the container's word, and a uprobe in the middle of
// an instruction corrupts the process it is placed in: such a profile steers a probe only
// where the binary itself confirms it. The function holding the probe must start where the
// profile says, by the binary's own declaration (an STT_FUNC symbol of .symtab or .dynsym,
// or an .eh_frame FDE: a stripped library such as librados.so.2 declares its Objecter in
// neither symbol table), and the probe must fall on an instruction boundary when the function
// is disassembled from that start (capstone, x86-64).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "profile/elf_file.h"
#include "profile/profile.h"
#include "profile/x86.h"

namespace cephscope::profile {

// The largest function disassembled to reach a probe.
inline constexpr std::uint64_t kMaxVerifiedFunctionBytes = std::uint64_t{1} << 20;

// The initial locations of the FDEs of an .eh_frame section whose first byte is at
// SECTION_VADDR. Entries it cannot read (an unknown pointer encoding, a truncated record)
// are skipped; the walk stops at the terminator or the end of DATA. Sorted, unique.
std::vector<std::uint64_t> eh_frame_function_starts(std::span<const std::uint8_t> data,
                                                    std::uint64_t section_vaddr);

class OffsetVerifier {
 public:
  // Reads the binary's declared function starts; an error when it declares none at all.
  static Result<OffsetVerifier> open(const std::string& binary_path);

  OffsetVerifier(OffsetVerifier&&) noexcept;
  OffsetVerifier& operator=(OffsetVerifier&&) noexcept;
  OffsetVerifier(const OffsetVerifier&) = delete;
  OffsetVerifier& operator=(const OffsetVerifier&) = delete;
  ~OffsetVerifier();

  // Whether FUNCTION starts at a declared function start, and PROBE_FILE_OFFSET (inside it)
  // is an instruction boundary; the error says which check failed.
  [[nodiscard]] Status check(const FunctionInstance& function,
                             std::uint64_t probe_file_offset) const;
  [[nodiscard]] bool declared(std::uint64_t vaddr) const;
  [[nodiscard]] std::size_t symbol_starts() const { return symbols_.size(); }
  [[nodiscard]] std::size_t fde_starts() const { return fdes_.size(); }

 private:
  OffsetVerifier(ElfFile elf, X86Decoder decoder);

  ElfFile elf_;
  X86Decoder decoder_;
  std::vector<std::uint64_t> symbols_;  // sorted
  std::vector<std::uint64_t> fdes_;     // sorted
};

}  // namespace cephscope::profile
