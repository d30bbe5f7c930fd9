#include "profile/profile.h"

#include <array>

namespace cephscope::profile {

namespace {

// DWARF register numbers of the x86-64 psABI, 0..16.
constexpr std::array<std::string_view, 17> kRegs = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};

constexpr std::array<std::pair<ItemStatus, std::string_view>, 5> kStatus = {{
    {ItemStatus::kOk, "ok"},
    {ItemStatus::kInlinedOnly, "inlined_only"},
    {ItemStatus::kNotFound, "not_found"},
    {ItemStatus::kNoDebuginfo, "no_debuginfo"},
    {ItemStatus::kError, "error"},
}};

}  // namespace

const CallSiteEntry* Profile::calls(std::string_view function, std::string_view callee) const {
  for (const auto& c : call_sites) {
    if (c.function == function && c.callee == callee) {
      return &c;
    }
  }
  return nullptr;
}

const FunctionEntry* Profile::function(std::string_view name) const {
  for (const auto& f : functions) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

const TypeEntry* Profile::type(std::string_view name) const {
  for (const auto& t : types) {
    if (t.name == name) {
      return &t;
    }
  }
  return nullptr;
}

const MemberEntry* Profile::member(std::string_view type, std::string_view path) const {
  for (const auto& m : members) {
    if (m.type == type && m.path == path) {
      return &m;
    }
  }
  return nullptr;
}

bool MemberOffsets::operator()(std::string_view type, std::string_view path, uint32_t& into) {
  if (!optional(type, path, into)) {
    missing_.append(missing_.empty() ? "" : ", ").append(type).append("::").append(path);
    return false;
  }
  return true;
}

bool MemberOffsets::optional(std::string_view type, std::string_view path, uint32_t& into) const {
  const auto* m = p_.member(type, path);
  if (m == nullptr || m->status != ItemStatus::kOk) {
    return false;
  }
  into = static_cast<uint32_t>(m->offset);
  return true;
}

Result<const FunctionInstance*> out_of_line(const Profile& p, std::string_view name) {
  const auto* fn = p.function(name);
  if (fn == nullptr) {
    return make_error(ErrorKind::kNotFound, "function not in profile");
  }
  if (fn->status == ItemStatus::kOk) {
    for (const auto& x : fn->instances) {
      if (!x.inlined && !x.clone) {
        return &x;
      }
    }
  }
  return make_error(ErrorKind::kNotFound, "function " + std::string(to_string(fn->status)));
}

uint64_t entry_offset(const FunctionInstance& f) {
  return f.file_offset + (f.entry_insn == "endbr64" ? 4 : 0);
}

std::string_view to_string(ItemStatus s) {
  for (const auto& [k, v] : kStatus) {
    if (k == s) {
      return v;
    }
  }
  return "error";
}

std::optional<ItemStatus> item_status_from(std::string_view s) {
  for (const auto& [k, v] : kStatus) {
    if (v == s) {
      return k;
    }
  }
  return std::nullopt;
}

std::string_view dwarf_reg_name(int reg) {
  return reg >= 0 && static_cast<size_t>(reg) < kRegs.size() ? kRegs[reg] : std::string_view{};
}

int dwarf_reg_from(std::string_view name) {
  for (size_t i = 0; i < kRegs.size(); ++i) {
    if (kRegs[i] == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace cephscope::profile
