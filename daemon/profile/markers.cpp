#include "profile/markers.h"

#include <array>
#include <charconv>
#include <optional>

namespace cephscope::profile {
namespace {

// Each general register's names by width (64, 32, 16, 8 bits), in DWARF order.
struct RegNames {
  std::array<std::string_view, 4> names;
};
constexpr std::array<RegNames, 17> kRegNames{{
    {{"rax", "eax", "ax", "al"}},
    {{"rdx", "edx", "dx", "dl"}},
    {{"rcx", "ecx", "cx", "cl"}},
    {{"rbx", "ebx", "bx", "bl"}},
    {{"rsi", "esi", "si", "sil"}},
    {{"rdi", "edi", "di", "dil"}},
    {{"rbp", "ebp", "bp", "bpl"}},
    {{"rsp", "esp", "sp", "spl"}},
    {{"r8", "r8d", "r8w", "r8b"}},
    {{"r9", "r9d", "r9w", "r9b"}},
    {{"r10", "r10d", "r10w", "r10b"}},
    {{"r11", "r11d", "r11w", "r11b"}},
    {{"r12", "r12d", "r12w", "r12b"}},
    {{"r13", "r13d", "r13w", "r13b"}},
    {{"r14", "r14d", "r14w", "r14b"}},
    {{"r15", "r15d", "r15w", "r15b"}},
    {{"rip", "", "", ""}},
}};

int reg_from(std::string_view name) {
  for (std::size_t i = 0; i < kRegNames.size(); ++i) {
    for (const auto n : kRegNames[i].names) {
      if (!n.empty() && n == name) {
        return static_cast<int>(i);
      }
    }
  }
  return -1;
}

std::optional<int64_t> integer(std::string_view s) {
  int64_t v = 0;
  int base = 10;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

Error bad(std::string_view arg, const std::string& why) {
  return make_error(ErrorKind::kInvalidInput, "argument \"" + std::string(arg) + "\": " + why);
}

Result<MarkerArg> parse_one(std::string_view arg) {
  const auto at = arg.find('@');
  if (at == std::string_view::npos) {
    return bad(arg, "no size@operand");
  }
  MarkerArg a;
  const auto size = integer(arg.substr(0, at));
  if (!size || (*size != 1 && *size != 2 && *size != 4 && *size != 8 && *size != -1 &&
                *size != -2 && *size != -4 && *size != -8)) {
    return bad(arg, "size is not 1, 2, 4 or 8");
  }
  a.is_signed = *size < 0;
  a.size = static_cast<uint8_t>(*size < 0 ? -*size : *size);
  std::string_view op = arg.substr(at + 1);
  if (op.starts_with('$')) {
    const auto v = integer(op.substr(1));
    if (!v) {
      return bad(arg, "constant is not a number");
    }
    a.kind = MarkerArg::Kind::kConstant;
    a.value = *v;
    return a;
  }
  if (op.starts_with('%')) {
    a.kind = MarkerArg::Kind::kRegister;
    a.dwarf_reg = reg_from(op.substr(1));
    if (a.dwarf_reg < 0 || a.dwarf_reg == 16) {
      return bad(arg, "unknown register");
    }
    return a;
  }
  const auto open = op.find('(');
  if (open == std::string_view::npos || !op.ends_with(')')) {
    return bad(arg, "operand is not %reg, $constant or disp(%reg)");
  }
  std::string_view inside = op.substr(open + 1, op.size() - open - 2);
  if (inside.find(',') != std::string_view::npos) {
    return bad(arg, "indexed operands are not supported");
  }
  if (!inside.starts_with('%')) {
    return bad(arg, "base is not a register");
  }
  a.kind = MarkerArg::Kind::kMemory;
  a.dwarf_reg = reg_from(inside.substr(1));
  if (a.dwarf_reg < 0 || a.dwarf_reg == 16) {
    // %rip-relative operands name a symbol the linker placed: not modelled.
    return bad(arg, a.dwarf_reg == 16 ? "%rip-relative operands are not supported"
                                      : "unknown base register");
  }
  const std::string_view disp = op.substr(0, open);
  if (!disp.empty()) {
    const auto v = integer(disp);
    if (!v || *v < -(int64_t{1} << 31) || *v >= (int64_t{1} << 31)) {
      return bad(arg, "displacement is not a 32-bit number");
    }
    a.value = *v;
  }
  return a;
}

}  // namespace

Result<std::vector<MarkerArg>> parse_marker_args(std::string_view spec) {
  std::vector<MarkerArg> out;
  while (!spec.empty()) {
    const auto start = spec.find_first_not_of(' ');
    if (start == std::string_view::npos) {
      break;
    }
    spec.remove_prefix(start);
    const auto end = spec.find(' ');
    const std::string_view arg = spec.substr(0, end);
    spec.remove_prefix(end == std::string_view::npos ? spec.size() : end);
    if (out.size() == kMaxMarkerArgs) {
      return make_error(ErrorKind::kInvalidInput,
                        "more than " + std::to_string(kMaxMarkerArgs) + " arguments");
    }
    auto a = parse_one(arg);
    if (!a.ok()) {
      return a.error();
    }
    out.push_back(*a);
  }
  return out;
}

std::vector<const Marker*> marker_sites(const std::vector<Marker>& markers,
                                        std::string_view provider, std::string_view name) {
  std::vector<const Marker*> out;
  for (const auto& m : markers) {
    if (m.provider == provider && m.name == name) {
      out.push_back(&m);
    }
  }
  return out;
}

bool is_marker_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxMarkerName) {
    return false;
  }
  for (const char c : s) {
    const bool word =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word) {
      return false;
    }
  }
  return true;
}

std::string_view to_string(MarkerArg::Kind k) {
  switch (k) {
    case MarkerArg::Kind::kRegister:
      return "register";
    case MarkerArg::Kind::kMemory:
      return "memory";
    case MarkerArg::Kind::kConstant:
      return "constant";
  }
  return "register";
}

std::optional<MarkerArg::Kind> marker_arg_kind_from(std::string_view s) {
  for (const auto k :
       {MarkerArg::Kind::kRegister, MarkerArg::Kind::kMemory, MarkerArg::Kind::kConstant}) {
    if (to_string(k) == s) {
      return k;
    }
  }
  return std::nullopt;
}

}  // namespace cephscope::profile
