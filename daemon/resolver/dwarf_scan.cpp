#include "resolver/dwarf_scan.h"

#include <dwarf.h>

#include <string_view>
#include <unordered_set>
#include <utility>

namespace cephscope::profile {

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

bool ref_offset(Dwarf_Die* die, unsigned attr_name, Dwarf_Off* out) {
  Dwarf_Attribute attr;
  Dwarf_Die target;
  if (dwarf_attr(die, attr_name, &attr) == nullptr ||
      dwarf_formref_die(&attr, &target) == nullptr) {
    return false;
  }
  *out = dwarf_dieoffset(&target);
  return true;
}

bool has_code(Dwarf_Die* die) {
  return dwarf_hasattr(die, DW_AT_low_pc) != 0 || dwarf_hasattr(die, DW_AT_ranges) != 0;
}

class Scanner {
 public:
  Scanner(const ScanRequest& request, CuScan& out) : request_(request), out_(out) {
    for (const auto& [name, index] : request.functions) {
      const size_t sep = name.rfind("::");
      last_names_.insert(sep == std::string::npos ? std::string_view(name)
                                                  : std::string_view(name).substr(sep + 2));
    }
  }

  void run(Dwarf_Die* cu_die) {
    walk_scope(cu_die);
    finish();
  }

 private:
  // Children of a namespace, class or the unit itself.
  void walk_scope(Dwarf_Die* parent) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) {
      return;
    }
    do {
      ++out_.dies_visited;
      switch (dwarf_tag(&child)) {
        case DW_TAG_namespace: {
          const char* name = dwarf_diename(&child);
          enter(name != nullptr ? name : "(anonymous namespace)", &child);
          break;
        }
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_enumeration_type:
          on_type(&child);
          break;
        case DW_TAG_typedef:
          if (const char* name = dwarf_diename(&child)) {
            out_.types.try_emplace(prefix_ + name, dwarf_dieoffset(&child));
          }
          break;
        case DW_TAG_subprogram:
          on_subprogram(&child);
          break;
        case DW_TAG_imported_unit:
          on_imported_unit(&child);
          break;
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  void enter(const char* name, Dwarf_Die* die) {
    const size_t old = prefix_.size();
    prefix_.append(name).append("::");
    walk_scope(die);
    prefix_.resize(old);
  }

  void on_type(Dwarf_Die* die) {
    const char* name = dwarf_diename(die);
    if (name == nullptr) {
      return;  // anonymous: reached through the member that holds it
    }
    std::string qualified = prefix_ + name;
    if (dwarf_hasattr(die, DW_AT_declaration) != 0) {
      out_.declarations.emplace(dwarf_dieoffset(die), std::move(qualified));
      if (dwarf_haschildren(die) != 0) {
        enter(name, die);  // a declaration can still carry member function declarations
      }
      return;
    }
    out_.types.try_emplace(qualified, dwarf_dieoffset(die));
    if (dwarf_tag(die) != DW_TAG_enumeration_type && dwarf_haschildren(die) != 0) {
      enter(name, die);
    }
  }

  void on_subprogram(Dwarf_Die* die) {
    const Dwarf_Off off = dwarf_dieoffset(die);
    if (const char* name = dwarf_diename(die); name != nullptr && last_names_.count(name) != 0) {
      auto it = request_.functions.find(prefix_ + name);
      if (it != request_.functions.end()) {
        matched_.emplace(off, it->second);
      }
    }
    Dwarf_Off target = 0;
    if (ref_offset(die, DW_AT_specification, &target) ||
        ref_offset(die, DW_AT_abstract_origin, &target)) {
      refs_.emplace(off, target);
    }
    if (dwarf_hasattr(die, DW_AT_declaration) == 0 && has_code(die)) {
      concretes_.push_back(off);
      if (request_.function_bodies) {
        walk_body(die, off);
      }
    }
  }

  // Inside a function: only inlined instances matter (and the blocks that hold them).
  void walk_body(Dwarf_Die* parent, Dwarf_Off caller) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) {
      return;
    }
    do {
      ++out_.dies_visited;
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_inlined_subroutine) {
        Dwarf_Off origin = 0;
        if (ref_offset(&child, DW_AT_abstract_origin, &origin)) {
          inlines_.push_back({dwarf_dieoffset(&child), origin, caller});
        }
        walk_body(&child, caller);
      } else if (tag == DW_TAG_lexical_block) {
        walk_body(&child, caller);
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  void on_imported_unit(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    Dwarf_Die unit;
    if (dwarf_attr(die, DW_AT_import, &attr) == nullptr ||
        dwarf_formref_die(&attr, &unit) == nullptr ||
        !imported_.insert(dwarf_dieoffset(&unit)).second) {
      return;
    }
    const std::string saved = std::exchange(prefix_, std::string());
    walk_scope(&unit);
    prefix_ = saved;
  }

  // Follows specification / abstract-origin links to a DIE matched by name.
  size_t resolve(Dwarf_Off off) const {
    for (int hops = 0; hops < 8; ++hops) {
      if (auto m = matched_.find(off); m != matched_.end()) {
        return m->second;
      }
      auto r = refs_.find(off);
      if (r == refs_.end()) {
        return kNone;
      }
      off = r->second;
    }
    return kNone;
  }

  void finish() {
    if (matched_.empty()) {
      return;
    }
    for (Dwarf_Off off : concretes_) {
      if (size_t f = resolve(off); f != kNone) {
        out_.functions.push_back({f, off, false, 0});
      }
    }
    for (const Inline& in : inlines_) {
      if (size_t f = resolve(in.origin); f != kNone) {
        out_.functions.push_back({f, in.die, true, in.caller});
      }
    }
  }

  struct Inline {
    Dwarf_Off die;
    Dwarf_Off origin;
    Dwarf_Off caller;
  };

  const ScanRequest& request_;
  CuScan& out_;
  std::string prefix_;
  std::unordered_set<std::string_view> last_names_;
  std::unordered_map<Dwarf_Off, size_t> matched_;
  std::unordered_map<Dwarf_Off, Dwarf_Off> refs_;
  std::vector<Dwarf_Off> concretes_;
  std::vector<Inline> inlines_;
  std::unordered_set<Dwarf_Off> imported_;
};

}  // namespace

CuScan scan_cu(Dwarf* dbg, Dwarf_Off cu_offset, const ScanRequest& request) {
  CuScan out;
  out.cu = cu_offset;
  Dwarf_Die cu_die;
  if (dwarf_offdie(dbg, cu_offset, &cu_die) == nullptr) {
    return out;
  }
  if (const char* name = dwarf_diename(&cu_die)) {
    out.name = name;
  }
  Scanner(request, out).run(&cu_die);
  return out;
}

}  // namespace cephscope::profile
