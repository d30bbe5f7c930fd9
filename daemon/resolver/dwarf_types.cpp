#include "resolver/dwarf_types.h"

#include <dwarf.h>

namespace cephscope::profile {

namespace {

constexpr int kMaxDepth = 16;

bool is_aggregate(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type;
}

bool type_of(Dwarf_Die* die, Dwarf_Die* out) {
  Dwarf_Attribute attr;
  return dwarf_attr_integrate(die, DW_AT_type, &attr) != nullptr &&
         dwarf_formref_die(&attr, out) != nullptr;
}

// Peels and completes: the definition behind typedefs, qualifiers and declarations.
bool resolve_type(Dwarf_Die* type, const CompleteType& complete, Dwarf_Die* out) {
  if (!peel(type, out)) {
    return false;
  }
  if (dwarf_hasattr(out, DW_AT_declaration) != 0) {
    Dwarf_Die def;
    if (!complete || !complete(out, &def)) {
      return false;
    }
    *out = def;
  }
  return true;
}

// DW_AT_data_member_location: a constant, or the DW_OP_plus_uconst expression older
// compilers emit. Anything else (a virtual base) has no fixed offset.
Result<uint64_t> member_location(Dwarf_Die* member) {
  Dwarf_Attribute attr;
  if (dwarf_attr(member, DW_AT_data_member_location, &attr) == nullptr) {
    return uint64_t{0};  // union members and the first member may omit it
  }
  Dwarf_Word value = 0;
  const unsigned form = dwarf_whatform(&attr);
  if (form != DW_FORM_exprloc && form != DW_FORM_block1 && dwarf_formudata(&attr, &value) == 0) {
    return uint64_t{value};
  }
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_getlocation(&attr, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_plus_uconst) {
    return uint64_t{ops[0].number};
  }
  return make_error(ErrorKind::kUnsupported, "no fixed offset (virtual base?)");
}

struct Found {
  Dwarf_Die member;
  uint64_t offset = 0;
};

// Looks NAME up in AGG the way C++ does: own members (anonymous ones are transparent), then
// base classes in declaration order.
Result<std::optional<Found>> find_member(Dwarf_Die* agg, std::string_view name, uint64_t base,
                                         const CompleteType& complete, int depth) {
  if (depth > kMaxDepth) {
    return make_error(ErrorKind::kDwarf, "type nesting too deep");
  }
  Dwarf_Die child;
  std::vector<Dwarf_Die> anonymous;
  std::vector<Dwarf_Die> bases;
  if (dwarf_child(agg, &child) == 0) {
    do {
      const int tag = dwarf_tag(&child);
      const char* n = dwarf_diename(&child);
      if (tag == DW_TAG_member) {
        if (n != nullptr && name == n) {
          if (dwarf_hasattr(&child, DW_AT_external) != 0) {
            return make_error(ErrorKind::kUnsupported, "static member has no offset");
          }
          auto loc = member_location(&child);
          if (!loc.ok()) {
            return loc.error();
          }
          return std::optional<Found>(Found{child, base + *loc});
        }
        if (n == nullptr) {
          anonymous.push_back(child);
        }
      } else if (tag == DW_TAG_variable && n != nullptr && name == n) {
        return make_error(ErrorKind::kUnsupported, "static member has no offset");
      } else if (tag == DW_TAG_inheritance) {
        bases.push_back(child);
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  for (auto* list : {&anonymous, &bases}) {
    for (Dwarf_Die& m : *list) {
      auto loc = member_location(&m);
      if (!loc.ok()) {
        continue;  // a virtual base: its members cannot be reached at a fixed offset
      }
      Dwarf_Die t;
      Dwarf_Die inner;
      if (!type_of(&m, &t) || !resolve_type(&t, complete, &inner) ||
          !is_aggregate(dwarf_tag(&inner))) {
        continue;
      }
      auto r = find_member(&inner, name, base + *loc, complete, depth + 1);
      if (!r.ok() || r->has_value()) {
        return r;
      }
    }
  }
  return std::optional<Found>();
}

void append_name(Dwarf_Die* type, std::string& out, int depth) {
  if (depth > kMaxDepth) {
    out += "...";
    return;
  }
  Dwarf_Die target;
  const bool has_target = type_of(type, &target);
  switch (dwarf_tag(type)) {
    case DW_TAG_pointer_type:
      if (has_target) {
        append_name(&target, out, depth + 1);
      } else {
        out += "void";
      }
      out += "*";
      return;
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
      if (has_target) {
        append_name(&target, out, depth + 1);
      }
      out += dwarf_tag(type) == DW_TAG_reference_type ? "&" : "&&";
      return;
    case DW_TAG_const_type:
    case DW_TAG_volatile_type: {
      const char* q = dwarf_tag(type) == DW_TAG_const_type ? "const" : "volatile";
      const int inner = has_target ? dwarf_tag(&target) : 0;
      if (inner == DW_TAG_pointer_type || inner == DW_TAG_reference_type) {
        append_name(&target, out, depth + 1);  // "T* const": the pointer is qualified
        out += std::string(" ") + q;
        return;
      }
      out += std::string(q) + " ";
      if (has_target) {
        append_name(&target, out, depth + 1);
      } else {
        out += "void";
      }
      return;
    }
    case DW_TAG_array_type: {
      if (has_target) {
        append_name(&target, out, depth + 1);
      }
      Dwarf_Die sub;
      if (dwarf_child(type, &sub) == 0) {
        do {
          Dwarf_Attribute a;
          Dwarf_Word v = 0;
          if (dwarf_attr(&sub, DW_AT_count, &a) != nullptr && dwarf_formudata(&a, &v) == 0) {
            out += "[" + std::to_string(v) + "]";
          } else if (dwarf_attr(&sub, DW_AT_upper_bound, &a) != nullptr &&
                     dwarf_formudata(&a, &v) == 0) {
            out += "[" + std::to_string(v + 1) + "]";
          } else {
            out += "[]";
          }
        } while (dwarf_siblingof(&sub, &sub) == 0);
      }
      return;
    }
    case DW_TAG_subroutine_type:
      out += "function";
      return;
    case DW_TAG_ptr_to_member_type:
      out += "member pointer";
      return;
    default: {
      const char* n = dwarf_diename(type);
      out += n != nullptr ? n : "<anonymous>";
    }
  }
}

}  // namespace

bool peel(Dwarf_Die* type, Dwarf_Die* out) {
  return dwarf_peel_type(type, out) == 0;
}

Result<MemberLayout> member_layout(Dwarf_Die* type, std::string_view path,
                                   const CompleteType& complete) {
  Dwarf_Die agg;
  if (!resolve_type(type, complete, &agg)) {
    return make_error(ErrorKind::kNotFound, "no complete definition of the type");
  }
  uint64_t offset = 0;
  std::string_view rest = path;
  std::string walked;
  while (true) {
    const size_t dot = rest.find('.');
    const std::string_view name = rest.substr(0, dot);
    if (!walked.empty()) {
      walked += '.';
    }
    walked += name;
    if (!is_aggregate(dwarf_tag(&agg))) {
      return make_error(ErrorKind::kInvalidInput, "'" + walked + "': parent is not a class");
    }
    auto found = find_member(&agg, name, offset, complete, 0);
    if (!found.ok()) {
      return make_error(found.error().kind, "'" + walked + "': " + found.error().message);
    }
    if (!found->has_value()) {
      return make_error(ErrorKind::kNotFound, "no member '" + walked + "'");
    }
    Found f = **found;
    offset = f.offset;
    Dwarf_Die member_type;
    if (!type_of(&f.member, &member_type)) {
      return make_error(ErrorKind::kDwarf, "'" + walked + "' has no type");
    }
    if (dot == std::string_view::npos) {
      MemberLayout out;
      out.offset = offset;
      out.type_name = type_name(&member_type);
      Dwarf_Attribute a;
      Dwarf_Word bits = 0;
      if (dwarf_attr(&f.member, DW_AT_bit_size, &a) != nullptr && dwarf_formudata(&a, &bits) == 0) {
        Dwarf_Word data_bit = 0;
        if (dwarf_attr(&f.member, DW_AT_data_bit_offset, &a) == nullptr ||
            dwarf_formudata(&a, &data_bit) != 0) {
          return make_error(ErrorKind::kUnsupported, "'" + walked + "': old-style bit-field");
        }
        out.offset = offset + data_bit / 8;  // a bit-field has no byte location of its own
        out.bit_offset = static_cast<uint32_t>(data_bit % 8);
        out.bit_size = static_cast<uint32_t>(bits);
        out.size = (data_bit % 8 + bits + 7) / 8;
        return out;
      }
      auto size = type_size(&member_type, complete);
      if (!size.ok() && size.error().kind != ErrorKind::kNotFound) {
        return make_error(size.error().kind, "'" + walked + "': " + size.error().message);
      }
      // A class whose definition this object lacks (GCC emits a class with a vtable only
      // where its key function is, maybe another library): the offset holds, the size is 0.
      out.size = size.ok() ? *size : 0;
      return out;
    }
    if (!resolve_type(&member_type, complete, &agg)) {
      return make_error(ErrorKind::kNotFound,
                        "'" + walked + "': no complete definition of its type");
    }
    if (dwarf_tag(&agg) == DW_TAG_pointer_type || dwarf_tag(&agg) == DW_TAG_reference_type) {
      return make_error(ErrorKind::kInvalidInput,
                        "'" + walked + "' is a pointer: offsets do not follow pointers");
    }
    rest.remove_prefix(dot + 1);
  }
}

Result<uint64_t> type_size(Dwarf_Die* type, const CompleteType& complete) {
  Dwarf_Die t;
  if (!resolve_type(type, complete, &t)) {
    return make_error(ErrorKind::kNotFound, "no complete definition of the type");
  }
  Dwarf_Word size = 0;
  if (dwarf_aggregate_size(&t, &size) != 0) {
    return make_error(ErrorKind::kDwarf, std::string("no size: ") + dwarf_errmsg(-1));
  }
  return uint64_t{size};
}

std::string type_name(Dwarf_Die* type) {
  std::string out;
  append_name(type, out, 0);
  return out;
}

}  // namespace cephscope::profile
