// One pass over one compile unit's DIE tree, keeping qualified names on a scope stack (libdw
// has no parent links). It records what the resolver asks for: the concrete and inlined
// instances of wanted functions, and every complete type definition by qualified name (member
// paths may lead to any type). Only the units a resolve needs are scanned, never them all.
#pragma once

#include <elfutils/libdw.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace cephscope::profile {

struct FunctionDie {
  size_t function = 0;  // index into the wanted function names
  Dwarf_Off die = 0;    // DW_TAG_subprogram (out-of-line) or DW_TAG_inlined_subroutine
  bool inlined = false;
  Dwarf_Off caller = 0;  // inlined: the concrete subprogram it sits in
};

struct CuScan {
  Dwarf_Off cu = 0;
  std::string name;  // DW_AT_name of the unit (the source file)
  std::vector<FunctionDie> functions;
  // Complete class/struct/union/enum definitions and typedefs, by qualified name.
  std::unordered_map<std::string, Dwarf_Off> types;
  // Declarations (incomplete types) by offset: their definition is in another unit.
  std::unordered_map<Dwarf_Off, std::string> declarations;
  size_t dies_visited = 0;
};

struct ScanRequest {
  std::unordered_map<std::string, size_t> functions;  // qualified name -> index
  bool function_bodies = true;                        // descend into bodies, for inlined instances
};

// Scans the unit whose CU DIE is at CU_OFFSET.
CuScan scan_cu(Dwarf* dbg, Dwarf_Off cu_offset, const ScanRequest& request);

}  // namespace cephscope::profile
