#include "resolver/resolver.h"

#include <dwarf.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "profile/x86.h"
#include "resolver/dwarf_scan.h"
#include "resolver/dwarf_types.h"
#include "resolver/markers_note.h"
#include "resolver/symbols.h"

#ifndef CEPHSCOPE_PROFILE_VERSION
#define CEPHSCOPE_PROFILE_VERSION "0"
#endif

namespace cephscope::profile {

namespace {

constexpr uint64_t kMaxCallerBytes = uint64_t{1} << 20;  // the largest function scanned for calls

// Addresses of code the linker dropped (duplicate COMDAT copies) keep a tombstone.
bool is_tombstone(Dwarf_Addr a) {
  return a == 0 || a >= ~Dwarf_Addr{1};
}

bool is_cold_part(std::string_view mangled) {
  return mangled.find(".cold") != std::string_view::npos;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  char buf[32];
  if (t == static_cast<std::time_t>(-1) || gmtime_r(&t, &tm) == nullptr ||
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    return "";  // unknown: the profile is as good without it
  }
  return buf;
}

// Everything one resolve needs, with the compile units scanned so far.
class Resolution {
 public:
  Resolution(const ElfFile& binary, const DwarfFile* debug, const ProbeSet& set,
             const ResolveOptions& options, SymbolIndex& symbols, const X86Decoder& x86)
      : binary_(binary), debug_(debug), set_(set), options_(options), symbols_(symbols), x86_(x86) {
    for (size_t i = 0; i < set.functions.size(); ++i) {
      request_.functions.emplace(set.functions[i], i);
    }
    request_.function_bodies = options.inlined;
  }

  void run(Profile& out) {
    if (debug_ == nullptr) {
      from_symbols(out);
      return;
    }
    select_function_units();
    for (Dwarf_Off cu : function_units_) {
      scan(cu, request_);
    }
    functions(out);
    types(out);
  }

  [[nodiscard]] size_t units_scanned() const { return scans_.size(); }
  [[nodiscard]] size_t dies_visited() const {
    size_t n = 0;
    for (const auto& [cu, s] : scans_) {
      n += s.dies_visited;
    }
    return n;
  }

 private:
  Dwarf* dbg() const { return debug_->dwarf(); }

  // The unit whose code covers ADDR, through .debug_aranges (or the units' own ranges).
  std::optional<Dwarf_Off> unit_of(Dwarf_Addr addr) {
    Dwarf_Die cu;
    if (dwarf_addrdie(dbg(), addr, &cu) != nullptr) {
      return dwarf_dieoffset(&cu);
    }
    Dwarf_Off off = 0;
    Dwarf_Off next = 0;
    size_t header = 0;
    while (dwarf_nextcu(dbg(), off, &next, &header, nullptr, nullptr, nullptr) == 0) {
      Dwarf_Die die;
      if (dwarf_offdie(dbg(), off + header, &die) != nullptr && dwarf_haspc(&die, addr) == 1) {
        return off + header;
      }
      off = next;
    }
    return std::nullopt;
  }

  // Units ordered by how many symbols of SCOPE they hold: the first defines the class.
  std::vector<Dwarf_Off> units_of_scope(std::string_view scope) {
    std::map<Dwarf_Off, size_t> count;
    for (const FunctionSymbol* s : symbols_.in_scope(scope)) {
      if (auto cu = unit_of(s->vaddr)) {
        ++count[*cu];
      }
    }
    std::vector<std::pair<size_t, Dwarf_Off>> ranked;
    ranked.reserve(count.size());
    for (const auto& [cu, n] : count) {
      ranked.emplace_back(n, cu);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<Dwarf_Off> out;
    out.reserve(ranked.size());
    for (const auto& [n, cu] : ranked) {
      out.push_back(cu);
    }
    return out;
  }

  void select_function_units() {
    std::set<Dwarf_Off> units;
    for (const std::string& name : set_.functions) {
      bool any = false;
      for (const FunctionSymbol* s : symbols_.named(name)) {
        if (auto cu = unit_of(s->vaddr)) {
          units.insert(*cu);
          any = true;
        }
      }
      // No symbol: inlined everywhere or absent. The unit defining its class is where GCC
      // (without LTO) can have inlined it.
      if (!any && !scope_of(name).empty()) {
        auto ranked = units_of_scope(scope_of(name));
        if (!ranked.empty()) {
          units.insert(ranked.front());
        }
      }
    }
    function_units_.assign(units.begin(), units.end());
  }

  const CuScan& scan(Dwarf_Off cu, const ScanRequest& request) {
    auto it = scans_.find(cu);
    if (it == scans_.end()) {
      it = scans_.emplace(cu, scan_cu(dbg(), cu, request)).first;
    }
    return it->second;
  }

  // A complete definition of the type named QUALIFIED, in the units scanned or in the units
  // its member-function symbols point at.
  bool find_type(const std::string& qualified, Dwarf_Die* out) {
    auto try_scanned = [&] {
      for (const auto& [cu, s] : scans_) {
        auto t = s.types.find(qualified);
        if (t != s.types.end() && dwarf_offdie(dbg(), t->second, out) != nullptr) {
          return true;
        }
      }
      return false;
    };
    if (try_scanned()) {
      return true;
    }
    if (!searched_types_.insert(qualified).second) {
      return false;
    }
    ScanRequest types_only;
    types_only.function_bodies = false;
    std::vector<Dwarf_Off> candidates = units_of_scope(qualified);
    for (std::string_view scope = scope_of(qualified); candidates.empty() && !scope.empty();
         scope = scope_of(scope)) {
      candidates = units_of_scope(scope);
    }
    size_t tried = 0;
    for (Dwarf_Off cu : candidates) {
      if (scans_.count(cu) != 0) {
        continue;
      }
      if (++tried > options_.max_type_units) {
        break;
      }
      const CuScan& s = scan(cu, types_only);
      auto t = s.types.find(qualified);
      if (t != s.types.end() && dwarf_offdie(dbg(), t->second, out) != nullptr) {
        return true;
      }
    }
    return false;
  }

  CompleteType completer() {
    return [this](Dwarf_Die* decl, Dwarf_Die* def) {
      Dwarf_Die cu;
      if (dwarf_diecu(decl, &cu, nullptr, nullptr) == nullptr) {
        return false;
      }
      auto s = scans_.find(dwarf_dieoffset(&cu));
      if (s == scans_.end()) {
        return false;
      }
      auto d = s->second.declarations.find(dwarf_dieoffset(decl));
      if (d == s->second.declarations.end()) {
        return false;
      }
      const std::string name = d->second;  // find_type may rehash scans_
      return find_type(name, def);
    };
  }

  void from_symbols(Profile& out) {
    for (const std::string& name : set_.functions) {
      FunctionEntry f;
      f.name = name;
      add_symbol_instances(f);
      f.status = f.instances.empty() ? ItemStatus::kNotFound : ItemStatus::kOk;
      if (f.instances.empty()) {
        f.message = "not in the symbol table (inlined or absent: DWARF can tell)";
      }
      out.functions.push_back(std::move(f));
    }
    const std::string no_dwarf =
        options_.no_dwarf_reason.empty() ? "no DWARF" : "no DWARF: " + options_.no_dwarf_reason;
    for (const TypeSpec& t : set_.types) {
      out.types.push_back(TypeEntry{t.name, ItemStatus::kNoDebuginfo, no_dwarf, 0});
      for (const std::string& path : t.members) {
        MemberEntry m;
        m.type = t.name;
        m.path = path;
        m.status = ItemStatus::kNoDebuginfo;
        m.message = no_dwarf;
        out.members.push_back(std::move(m));
      }
    }
  }

  // Out-of-line copies the symbol table knows and DWARF did not describe.
  void add_symbol_instances(FunctionEntry& f) {
    for (const FunctionSymbol* s : symbols_.named(f.name)) {
      if (is_cold_part(s->mangled) ||
          std::any_of(f.instances.begin(), f.instances.end(),
                      [&](const FunctionInstance& i) { return i.vaddr == s->vaddr; })) {
        continue;
      }
      FunctionInstance inst;
      inst.vaddr = s->vaddr;
      inst.size = s->size;
      inst.symbol = s->mangled;
      inst.clone = is_clone(s->mangled);
      inst.linkage_name = s->mangled.substr(0, s->mangled.find('.'));
      if (!place(inst)) {
        continue;
      }
      f.instances.push_back(std::move(inst));
    }
  }

  // File offset and first instruction, from the binary; false if VADDR is not in it. The
  // entry instruction stays unknown ("") when its bytes cannot be read.
  bool place(FunctionInstance& inst) {
    auto off = binary_.vaddr_to_offset(inst.vaddr);
    if (!off.ok()) {
      return false;
    }
    inst.file_offset = *off;
    auto code = binary_.read_at(inst.file_offset, 16);
    if (!code.ok()) {
      spdlog::warn("{}", code.error().message);
      inst.entry_insn.clear();
      return true;
    }
    inst.entry_insn = std::string(x86_.entry_kind(*code));
    return true;
  }

  // The entry of a concrete subprogram: DW_AT_entry_pc/low_pc, or for a function split into
  // hot and cold ranges, the range a (non-cold) symbol starts.
  std::optional<Dwarf_Addr> entry_of(Dwarf_Die* die, uint64_t* size) {
    Dwarf_Addr entry = 0;
    Dwarf_Addr low = 0;
    Dwarf_Addr high = 0;
    if (dwarf_entrypc(die, &entry) == 0 && !is_tombstone(entry)) {
      if (dwarf_lowpc(die, &low) == 0 && dwarf_highpc(die, &high) == 0 && high > low) {
        *size = high - low;
      }
      return entry;
    }
    std::optional<Dwarf_Addr> best;
    Dwarf_Addr base = 0;
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    for (ptrdiff_t o = 0; (o = dwarf_ranges(die, o, &base, &start, &end)) > 0;) {
      if (is_tombstone(start)) {
        continue;
      }
      const FunctionSymbol* s = symbols_.at(start);
      const bool named = s != nullptr && !is_cold_part(s->mangled);
      if (named || !best || start < *best) {
        best = start;
        *size = end - start;
        if (named) {
          break;
        }
      }
    }
    return best;
  }

  std::string caller_name(Dwarf_Off off) {
    Dwarf_Die die;
    if (dwarf_offdie(dbg(), off, &die) == nullptr) {
      return {};
    }
    Dwarf_Attribute a;
    if (const char* link = dwarf_formstring(dwarf_attr_integrate(&die, DW_AT_linkage_name, &a))) {
      return qualified_name(demangle(link));
    }
    const char* name = dwarf_formstring(dwarf_attr_integrate(&die, DW_AT_name, &a));
    return name != nullptr ? name : "";
  }

  void functions(Profile& out) {
    std::vector<std::vector<const FunctionDie*>> found(set_.functions.size());
    for (const auto& [cu, s] : scans_) {
      for (const FunctionDie& fd : s.functions) {
        found[fd.function].push_back(&fd);
      }
    }
    for (size_t i = 0; i < set_.functions.size(); ++i) {
      FunctionEntry f;
      f.name = set_.functions[i];
      std::vector<FunctionInstance> inlined;
      for (const FunctionDie* fd : found[i]) {
        Dwarf_Die die;
        if (dwarf_offdie(dbg(), fd->die, &die) == nullptr) {
          continue;
        }
        FunctionInstance inst;
        inst.inlined = fd->inlined;
        auto entry = entry_of(&die, &inst.size);
        if (!entry) {
          continue;  // a discarded duplicate
        }
        inst.vaddr = *entry;
        auto& list = inst.inlined ? inlined : f.instances;
        if (std::any_of(list.begin(), list.end(),
                        [&](const FunctionInstance& o) { return o.vaddr == inst.vaddr; }) ||
            !place(inst)) {
          continue;
        }
        if (inst.inlined) {
          inst.caller = caller_name(fd->caller);
        } else {
          Dwarf_Attribute a;
          if (const char* link =
                  dwarf_formstring(dwarf_attr_integrate(&die, DW_AT_linkage_name, &a))) {
            inst.linkage_name = link;
          }
          if (const FunctionSymbol* s = symbols_.at(inst.vaddr)) {
            inst.symbol = s->mangled;
            inst.clone = is_clone(s->mangled);
            if (s->size != 0) {
              inst.size = s->size;  // the symbol's size covers the hot part only
            }
          }
        }
        list.push_back(std::move(inst));
      }
      add_symbol_instances(f);
      auto by_addr = [](const FunctionInstance& a, const FunctionInstance& b) {
        return a.vaddr < b.vaddr;
      };
      std::sort(f.instances.begin(), f.instances.end(), by_addr);
      std::sort(inlined.begin(), inlined.end(), by_addr);
      if (!f.instances.empty()) {
        f.status = ItemStatus::kOk;
      } else if (!inlined.empty()) {
        f.status = ItemStatus::kInlinedOnly;
        f.message = "no out-of-line copy; inlined at " + std::to_string(inlined.size()) + " sites";
      } else {
        f.status = ItemStatus::kNotFound;
        f.message = "no symbol and no DWARF subprogram of that name in the units scanned";
      }
      f.instances.insert(f.instances.end(), inlined.begin(), inlined.end());
      out.functions.push_back(std::move(f));
    }
  }

  void types(Profile& out) {
    const CompleteType complete = completer();
    for (const TypeSpec& spec : set_.types) {
      TypeEntry t;
      t.name = spec.name;
      Dwarf_Die die;
      const bool found = find_type(spec.name, &die);
      if (!found) {
        t.status = ItemStatus::kNotFound;
        t.message = "no complete definition in the units scanned";
      } else if (auto size = type_size(&die, complete); size.ok()) {
        t.status = ItemStatus::kOk;
        t.size = *size;
      } else {
        t.status = ItemStatus::kError;
        t.message = size.error().message;
      }
      out.types.push_back(t);
      for (const std::string& path : spec.members) {
        MemberEntry m;
        m.type = spec.name;
        m.path = path;
        if (!found) {
          m.status = ItemStatus::kNotFound;
          m.message = t.message;
        } else if (auto layout = member_layout(&die, path, complete); layout.ok()) {
          m.status = ItemStatus::kOk;
          m.offset = layout->offset;
          m.size = layout->size;
          m.type_name = layout->type_name;
          m.bit_offset = layout->bit_offset;
          m.bit_size = layout->bit_size;
        } else {
          m.status = layout.error().kind == ErrorKind::kNotFound ? ItemStatus::kNotFound
                                                                 : ItemStatus::kError;
          m.message = layout.error().message;
        }
        out.members.push_back(std::move(m));
      }
    }
  }

  const ElfFile& binary_;
  const DwarfFile* debug_;
  const ProbeSet& set_;
  const ResolveOptions& options_;
  SymbolIndex& symbols_;
  const X86Decoder& x86_;
  ScanRequest request_;
  std::vector<Dwarf_Off> function_units_;
  std::unordered_map<Dwarf_Off, CuScan> scans_;
  std::set<std::string> searched_types_;
};

// The direct calls of SPEC's callee in SPEC's function, both resolved in P (the set lists
// them among its functions).
CallSiteEntry find_calls(const Profile& p, const ElfFile& binary, const X86Decoder& x86,
                         const CallSpec& spec) {
  CallSiteEntry c{spec.function, spec.callee, ItemStatus::kOk, "", {}};
  auto caller = out_of_line(p, spec.function);
  auto callee = out_of_line(p, spec.callee);
  if (!caller.ok() || !callee.ok()) {
    c.status = ItemStatus::kNotFound;
    c.message = std::string(caller.ok() ? spec.callee : spec.function) + ": " +
                (caller.ok() ? callee : caller).error().message;
    return c;
  }
  const FunctionInstance& f = **caller;
  if (f.size == 0 || f.size > kMaxCallerBytes) {
    c.status = ItemStatus::kError;
    c.message = spec.function + " has an unusable size (" + std::to_string(f.size) + " bytes)";
    return c;
  }
  auto code = binary.read_at(f.file_offset, f.size);
  if (!code.ok() || code->size() != f.size) {
    c.status = ItemStatus::kError;
    c.message = code.ok() ? "short read of " + spec.function : code.error().message;
    return c;
  }
  c.sites = x86.calls_to(*code, f.vaddr, f.file_offset, (*callee)->vaddr);
  if (c.sites.empty()) {
    c.status = ItemStatus::kNotFound;
    c.message = "no direct call of " + spec.callee + " in " + spec.function;
  }
  return c;
}

}  // namespace

std::string generator_name() {
  return std::string("cephscope ") + CEPHSCOPE_PROFILE_VERSION;
}

Result<Profile> resolve_profile(const ElfFile& binary, const DwarfFile* debug, const ProbeSet& set,
                                const ResolveOptions& options, ResolveStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  auto build_id = binary.build_id();
  if (!build_id.ok()) {
    return build_id.error();
  }
  if (debug != nullptr && &debug->file() != &binary) {
    auto debug_id = debug->file().build_id();
    if (debug_id.ok() && *debug_id != *build_id) {
      return make_error(ErrorKind::kInvalidInput, debug->file().path() + " is for build-id " +
                                                      *debug_id + ", not " + *build_id);
    }
  }
  // The debug file's .symtab has every function, locals included; a stripped binary only
  // has .dynsym.
  auto syms =
      debug != nullptr ? read_function_symbols(debug->file()) : read_function_symbols(binary);
  if (!syms.ok() && debug != nullptr) {
    syms = read_function_symbols(binary);
  }
  std::vector<FunctionSymbol> symbol_list;
  if (syms.ok()) {
    symbol_list = std::move(syms).value();
  } else if (debug == nullptr && !(set.functions.empty() && set.types.empty())) {
    return syms.error();  // a set of markers alone needs no symbols
  }
  SymbolIndex symbols(std::move(symbol_list));

  Profile p;
  p.build_id = *build_id;
  p.object = options.object.empty() ? std::filesystem::path(binary.path()).filename().string()
                                    : options.object;
  p.binary_path = binary.path();
  p.source = debug != nullptr ? "dwarf" : "symtab";
  p.debug_file = debug != nullptr ? debug->file().path() : "";
  p.probe_set = set.name;
  p.probe_set_digest = set.digest;
  p.generator = generator_name();
  p.created = utc_now();

  auto x86 = X86Decoder::open();
  if (!x86.ok()) {
    return x86.error();
  }
  Resolution r(binary, debug, set, options, symbols, *x86);
  r.run(p);
  for (const auto& spec : set.calls) {
    p.call_sites.push_back(find_calls(p, binary, *x86, spec));
  }
  if (set.markers) {
    auto markers = read_markers(binary);
    if (!markers.ok()) {
      return markers.error();
    }
    p.markers = std::move(markers).value();
  }
  if (stats != nullptr) {
    stats->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats->units_scanned = r.units_scanned();
    stats->dies_visited = r.dies_visited();
    stats->symbols = symbols.size();
    stats->demangled = symbols.demangled_count();
  }
  return p;
}

}  // namespace cephscope::profile
