// Static markers (SystemTap SDT, "USDT"): the probes a program carries in .note.stapsdt, as
// the resolver reads them and a profile stores them. Each marker names a provider and a probe,
// sits at one address (a marker can appear at several), may have a semaphore (a counter the
// program tests before it computes the arguments; the kernel raises it while a uprobe with a
// reference-counter offset is attached), and describes its arguments in the assembler's
// operand syntax: "8@%rdi", "-4@-80(%rbx)", "-4@$5" (size in bytes, negative when signed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cephscope::profile {

struct MarkerArg {
  enum class Kind {
    kRegister,  // the value of dwarf_reg
    kMemory,    // the SIZE bytes at dwarf_reg + value
    kConstant,  // value itself
  };
  Kind kind = Kind::kRegister;
  int dwarf_reg = -1;  // x86-64 DWARF numbering (profile.h: dwarf_reg_name)
  int64_t value = 0;   // kMemory: the displacement; kConstant: the value
  uint8_t size = 8;    // 1, 2, 4 or 8
  bool is_signed = false;
};

struct Marker {
  std::string provider;  // "libstdcxx"
  std::string name;      // "throw"
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;       // what a uprobe takes
  uint64_t semaphore_offset = 0;  // file offset of the semaphore; 0: none
  std::string arg_spec;           // as the note has it, for humans
  std::vector<MarkerArg> args;    // decoded; empty with args_error when not decodable
  std::string args_error;
};

// The most markers a profile keeps, and a note's longest provider or probe name.
inline constexpr std::size_t kMaxMarkers = 4096;
inline constexpr std::size_t kMaxMarkerName = 64;
inline constexpr std::size_t kMaxMarkerArgs = 12;

// Decodes an x86-64 argument spec ("8@%rdi -4@-80(%rbx) 4@$5"). Indexed ("8@(%rax,%rdx,8)")
// and symbol-relative ("8@foo(%rip)") operands are refused with the reason.
Result<std::vector<MarkerArg>> parse_marker_args(std::string_view spec);

// The sites of PROVIDER:NAME among MARKERS (a marker can sit at several places).
std::vector<const Marker*> marker_sites(const std::vector<Marker>& markers,
                                        std::string_view provider, std::string_view name);

// A provider or probe name as notes carry them: [A-Za-z0-9_], 1 to kMaxMarkerName.
bool is_marker_name(std::string_view s);

std::string_view to_string(MarkerArg::Kind k);
std::optional<MarkerArg::Kind> marker_arg_kind_from(std::string_view s);

}  // namespace cephscope::profile
