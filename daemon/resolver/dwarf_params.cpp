#include "resolver/dwarf_params.h"

#include <dwarf.h>

#include <array>
#include <cinttypes>
#include <cstdio>

namespace cephscope::profile {

namespace {

constexpr int kRsp = 7;
// Integer argument registers of the SysV x86-64 ABI, as DWARF numbers: rdi rsi rdx rcx r8 r9.
constexpr std::array<int, 6> kIntArgRegs = {5, 4, 1, 2, 8, 9};

enum class ArgClass { kInteger, kSse, kUnknown };

bool attr_type(Dwarf_Die* die, Dwarf_Die* out) {
  Dwarf_Attribute a;
  return dwarf_attr_integrate(die, DW_AT_type, &a) != nullptr &&
         dwarf_formref_die(&a, out) != nullptr;
}

uint64_t die_size(Dwarf_Die* type) {
  Dwarf_Die t;
  if (!peel(type, &t)) {
    return 0;
  }
  Dwarf_Word size = 0;
  if (dwarf_aggregate_size(&t, &size) == 0) {
    return size;
  }
  const int b = dwarf_bytesize(&t);
  return b > 0 ? static_cast<uint64_t>(b) : 0;
}

bool passed_by_reference(Dwarf_Die* agg) {
  Dwarf_Attribute a;
  Dwarf_Word cc = 0;
  return dwarf_attr(agg, DW_AT_calling_convention, &a) != nullptr &&
         dwarf_formudata(&a, &cc) == 0 && cc == DW_CC_pass_by_reference;
}

// How one parameter of TYPE travels, for as far as this resolver needs to count registers.
ArgClass classify(Dwarf_Die* type, const CompleteType& complete) {
  Dwarf_Die t;
  if (!peel(type, &t)) {
    return ArgClass::kUnknown;
  }
  const uint64_t size = die_size(&t);
  switch (dwarf_tag(&t)) {
    case DW_TAG_pointer_type:
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_enumeration_type:
      return ArgClass::kInteger;
    case DW_TAG_ptr_to_member_type:
      return size == 8 ? ArgClass::kInteger : ArgClass::kUnknown;
    case DW_TAG_base_type: {
      Dwarf_Attribute a;
      Dwarf_Word enc = 0;
      if (dwarf_attr(&t, DW_AT_encoding, &a) == nullptr || dwarf_formudata(&a, &enc) != 0) {
        return ArgClass::kUnknown;
      }
      if (enc == DW_ATE_float) {
        return size <= 8 ? ArgClass::kSse : ArgClass::kUnknown;
      }
      return size <= 8 && enc != DW_ATE_complex_float ? ArgClass::kInteger : ArgClass::kUnknown;
    }
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type: {
      Dwarf_Die def = t;
      if (dwarf_hasattr(&t, DW_AT_declaration) != 0 && !(complete && complete(&t, &def))) {
        return ArgClass::kUnknown;
      }
      // A non-trivial class goes by invisible reference: a pointer in the next register.
      return passed_by_reference(&def) ? ArgClass::kInteger : ArgClass::kUnknown;
    }
    default:
      return ArgClass::kUnknown;
  }
}

// Returning a class in memory takes rdi for the hidden result pointer.
bool returns_in_memory(Dwarf_Die* function, const CompleteType& complete) {
  Dwarf_Die ret;
  Dwarf_Die t;
  if (!attr_type(function, &ret) || !peel(&ret, &t)) {
    return false;
  }
  const int tag = dwarf_tag(&t);
  if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type && tag != DW_TAG_union_type) {
    return false;
  }
  Dwarf_Die def = t;
  if (dwarf_hasattr(&t, DW_AT_declaration) != 0 && complete) {
    complete(&t, &def);
  }
  return passed_by_reference(&def) || die_size(&def) > 16;
}

std::string describe(const Dwarf_Op* ops, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%sop0x%02x(%" PRIu64 ",%" PRIu64 ")", i ? " " : "", ops[i].atom,
                  static_cast<uint64_t>(ops[i].number), static_cast<uint64_t>(ops[i].number2));
    out += buf;
  }
  return out;
}

// Translates one location expression valid at the entry pc.
ParamLocation translate(Dwarf_Attribute* attr, const Dwarf_Op* ops, size_t n, bool cfa_base) {
  ParamLocation loc;
  if (n == 0) {
    return loc;
  }
  const Dwarf_Op& op = ops[0];
  if (n == 1 && op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) {
    loc.kind = ParamLocation::Kind::kRegister;
    loc.dwarf_reg = op.atom - DW_OP_reg0;
  } else if (n == 1 && op.atom == DW_OP_regx) {
    loc.kind = ParamLocation::Kind::kRegister;
    loc.dwarf_reg = static_cast<int>(op.number);
  } else if (n == 1 && op.atom >= DW_OP_breg0 && op.atom <= DW_OP_breg31) {
    loc.kind = ParamLocation::Kind::kMemory;
    loc.dwarf_reg = op.atom - DW_OP_breg0;
    loc.offset = static_cast<int64_t>(op.number);
  } else if (n == 1 && op.atom == DW_OP_fbreg && cfa_base &&
             !__builtin_add_overflow(static_cast<int64_t>(op.number), int64_t{8}, &loc.offset)) {
    // The frame base is the CFA; at the first instruction the CFA is rsp + 8 (the return
    // address was just pushed). An offset that overflows is a corrupt file: complex.
    loc.kind = ParamLocation::Kind::kMemory;
    loc.dwarf_reg = kRsp;
  } else if (n == 2 && (op.atom == DW_OP_entry_value || op.atom == DW_OP_GNU_entry_value) &&
             ops[1].atom == DW_OP_stack_value) {
    // At the entry pc a register's entry value is its current value.
    Dwarf_Attribute inner;
    Dwarf_Op* sub = nullptr;
    size_t sub_n = 0;
    if (dwarf_getlocation_attr(attr, &op, &inner) == 0 &&
        dwarf_getlocation(&inner, &sub, &sub_n) == 0 && sub_n == 1 && sub[0].atom >= DW_OP_reg0 &&
        sub[0].atom <= DW_OP_reg31) {
      loc.kind = ParamLocation::Kind::kRegister;
      loc.dwarf_reg = sub[0].atom - DW_OP_reg0;
    } else {
      loc.kind = ParamLocation::Kind::kComplex;
      loc.expr = describe(ops, n);
    }
  } else {
    loc.kind = ParamLocation::Kind::kComplex;
    loc.offset = 0;
    loc.expr = describe(ops, n);
  }
  if (loc.dwarf_reg > 16) {
    loc.kind = ParamLocation::Kind::kComplex;  // vector registers: not modelled
    loc.expr = describe(ops, n);
  }
  return loc;
}

bool frame_base_is_cfa(Dwarf_Die* function, Dwarf_Addr entry) {
  Dwarf_Attribute attr;
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  if (dwarf_attr(function, DW_AT_frame_base, &attr) == nullptr) {
    return false;
  }
  if (dwarf_getlocation_addr(&attr, entry, &ops, &n, 1) != 1) {
    return false;
  }
  return n == 1 && ops[0].atom == DW_OP_call_frame_cfa;
}

}  // namespace

std::vector<Param> entry_params(Dwarf_Die* function, Dwarf_Addr entry, bool is_clone,
                                const CompleteType& complete) {
  std::vector<Param> params;
  const bool cfa = frame_base_is_cfa(function, entry);
  bool abi_known = !is_clone;
  size_t next_reg = returns_in_memory(function, complete) ? 1 : 0;

  Dwarf_Die child;
  if (dwarf_child(function, &child) != 0) {
    return params;
  }
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_unspecified_parameters) {
      break;
    }
    if (tag != DW_TAG_formal_parameter) {
      continue;
    }
    Param p;
    Dwarf_Attribute a;
    if (const char* name = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_name, &a))) {
      p.name = name;
    }
    Dwarf_Die type;
    ArgClass cls = ArgClass::kUnknown;
    if (attr_type(&child, &type)) {
      p.type = type_name(&type);
      p.size = die_size(&type);
      cls = classify(&type, complete);
    }
    if (dwarf_attr(&child, DW_AT_location, &a) != nullptr) {
      Dwarf_Op* ops = nullptr;
      size_t n = 0;
      if (dwarf_getlocation_addr(&a, entry, &ops, &n, 1) == 1) {
        p.location = translate(&a, ops, n, cfa);
      }
    }
    const bool spill_slot = p.location.kind == ParamLocation::Kind::kMemory &&
                            p.location.dwarf_reg == kRsp && p.location.offset < 0;
    const bool missing = p.location.kind == ParamLocation::Kind::kUnavailable;
    if ((spill_slot || missing) && abi_known && cls == ArgClass::kInteger &&
        next_reg < kIntArgRegs.size()) {
      p.location = ParamLocation{};
      p.location.kind = ParamLocation::Kind::kRegister;
      p.location.dwarf_reg = kIntArgRegs[next_reg];
      p.location.from_abi = true;
    } else if (spill_slot) {
      p.location = ParamLocation{};  // below the stack pointer: nothing there yet
    }
    if (cls == ArgClass::kInteger) {
      ++next_reg;
    } else if (cls == ArgClass::kUnknown) {
      abi_known = false;  // cannot count registers past this one
    }
    params.push_back(std::move(p));
  } while (dwarf_siblingof(&child, &child) == 0);
  return params;
}

}  // namespace cephscope::profile
