// Function symbols (.symtab or .dynsym) and C++ name handling. Used two ways: as the fallback
// resolver when no DWARF exists (Debian's ceph-osd exports its C++ functions in .dynsym), and
// as the index that tells the DWARF resolver which compile units to open.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "profile/elf_file.h"

namespace cephscope::profile {

struct FunctionSymbol {
  std::string mangled;  // as in the table, with any ".isra.0"-style clone suffix
  uint64_t vaddr = 0;
  uint64_t size = 0;
  bool global = false;
};

// STT_FUNC/STT_GNU_IFUNC symbols with an address, from .symtab when it has any, else .dynsym.
Result<std::vector<FunctionSymbol>> read_function_symbols(const ElfFile& elf);

// The demangled name, or MANGLED itself when it is not a C++ name.
std::string demangle(const std::string& mangled);

// "void ns::C<int>::f(int) const [clone .isra.0]" -> "ns::C<int>::f". ABI tags are dropped.
std::string qualified_name(std::string_view demangled);

// True for compiler-made copies whose calling convention may differ: .isra, .constprop,
// .part and .cold pieces.
bool is_clone(std::string_view mangled);

// Looks symbols up by qualified name, demangling only the symbols that can match.
class SymbolIndex {
 public:
  explicit SymbolIndex(std::vector<FunctionSymbol> symbols);

  // Symbols whose qualified name is NAME ("OSD::dequeue_op").
  std::vector<const FunctionSymbol*> named(std::string_view name);
  // Symbols whose qualified name starts with SCOPE + "::" ("BlueStore::TransContext").
  std::vector<const FunctionSymbol*> in_scope(std::string_view scope);
  // The symbol starting at VADDR; an original is preferred to a clone, a global to a local.
  [[nodiscard]] const FunctionSymbol* at(uint64_t vaddr) const;

  [[nodiscard]] size_t size() const { return symbols_.size(); }
  [[nodiscard]] size_t demangled_count() const { return demangled_count_; }

 private:
  const std::string& qualified(size_t i);
  // Indices of symbols whose mangled form can contain the identifier IDENT.
  std::vector<size_t> candidates(std::string_view ident);

  std::vector<FunctionSymbol> symbols_;
  std::vector<std::optional<std::string>> qualified_;  // memoised per symbol
  std::unordered_map<uint64_t, size_t> by_addr_;
  size_t demangled_count_ = 0;
};

// The last component of a qualified name, ignoring template arguments: "a::B<c::D>::f" -> "f".
std::string_view last_component(std::string_view qualified);
// Everything before the last component: "a::B::f" -> "a::B"; "" for an unqualified name.
std::string_view scope_of(std::string_view qualified);

}  // namespace cephscope::profile
