// Parameter locations at a function's first instruction, where a uprobe fires: the DWARF
// location (list) evaluated at the entry pc and turned into "register R" or "memory at R+N"
// (x86-64). Where DWARF has nothing usable at entry (an -O0 spill slot the prologue has not
// written yet, or an optimised-out value), the SysV calling convention still says where the
// caller put the argument; such locations are marked from_abi. Never for clones, whose
// convention the compiler may have changed.
#pragma once

#include <elfutils/libdw.h>

#include <vector>

#include "profile/profile.h"
#include "resolver/dwarf_types.h"

namespace cephscope::profile {

std::vector<Param> entry_params(Dwarf_Die* function, Dwarf_Addr entry, bool is_clone,
                                const CompleteType& complete);

}  // namespace cephscope::profile
