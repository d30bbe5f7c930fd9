// Type layouts from DWARF: member offsets by dotted path (through base classes, nested and
// anonymous members), type sizes and short type names.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cephscope::profile {

// Fills DEFINITION with the complete type for DECLARATION (a DW_AT_declaration DIE, as GCC
// emits for classes whose vtable lives in another unit). False when none can be found.
using CompleteType = std::function<bool(Dwarf_Die* declaration, Dwarf_Die* definition)>;

struct MemberLayout {
  uint64_t offset = 0;
  uint64_t size = 0;  // 0: the member's class is defined in another object, its size unknown
  std::string type_name;
  std::optional<uint32_t> bit_offset;
  std::optional<uint32_t> bit_size;
};

// PATH ("reqid.name._num") inside the class/struct/union TYPE.
Result<MemberLayout> member_layout(Dwarf_Die* type, std::string_view path,
                                   const CompleteType& complete);

// Byte size of TYPE (typedefs and qualifiers peeled, declarations completed).
Result<uint64_t> type_size(Dwarf_Die* type, const CompleteType& complete);

// "const std::string&", "OSD*", "int[4]": for humans, not for matching.
std::string type_name(Dwarf_Die* type);

// Strips typedefs and cv-qualifiers; false if TYPE has no DW_AT_type to follow.
bool peel(Dwarf_Die* type, Dwarf_Die* out);

}  // namespace cephscope::profile
