// resolve_profile(): a probe set resolved against one binary, into a Profile.
//
// The symbol table is the index: the addresses of a function's symbols name, through
// .debug_aranges, the few compile units worth scanning; a class's member-function symbols
// name the unit that defines the class. Only those units are walked. Without DWARF, function
// offsets come from the symbol table alone (Debian's ceph-osd exports them in .dynsym).
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"
#include "profile/elf_file.h"
#include "profile/probe_set.h"
#include "profile/profile.h"
#include "resolver/dwarf_file.h"

namespace cephscope::profile {

struct ResolveOptions {
  std::string object;           // recorded in the profile; default: the binary's file name
  bool inlined = true;          // list inlined instances (needs function bodies walked)
  size_t max_type_units = 4;    // units tried when looking for one type's definition
  std::string no_dwarf_reason;  // without DWARF: why (a refused debug file), on every member
};

struct ResolveStats {
  double seconds = 0;
  size_t units_scanned = 0;
  size_t dies_visited = 0;
  size_t symbols = 0;
  size_t demangled = 0;
};

// BINARY is the file uprobes attach to: its program headers turn addresses into file
// offsets and its bytes give entry instructions. DEBUG holds its DWARF (it may be the same
// file) or is null. A debug file of another build is refused.
Result<Profile> resolve_profile(const ElfFile& binary, const DwarfFile* debug, const ProbeSet& set,
                                const ResolveOptions& options = {}, ResolveStats* stats = nullptr);

// "cephscope 0.1.0"
std::string generator_name();

}  // namespace cephscope::profile
