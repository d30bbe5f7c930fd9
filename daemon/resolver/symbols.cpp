#include "resolver/symbols.h"

#include <cxxabi.h>
#include <gelf.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace cephscope::profile {

namespace {

bool is_function_symbol(const GElf_Sym& sym) {
  const int type = GELF_ST_TYPE(sym.st_info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_value != 0 &&
         sym.st_shndx != SHN_UNDEF;
}

Result<std::vector<FunctionSymbol>> read_table(const ElfFile& elf, Elf_Scn* scn) {
  std::vector<FunctionSymbol> out;
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_entsize == 0) {
    return make_error(ErrorKind::kInvalidInput, elf.path() + ": bad symbol table header");
  }
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) {
    return make_error(ErrorKind::kInvalidInput,
                      elf.path() + ": unreadable symbol table: " + elf_errmsg(-1));
  }
  const size_t count = data->d_size / shdr.sh_entsize;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || !is_function_symbol(sym)) {
      continue;
    }
    const char* name = elf_strptr(elf.elf(), shdr.sh_link, sym.st_name);
    if (name == nullptr || *name == '\0') {
      continue;
    }
    out.push_back(
        FunctionSymbol{name, sym.st_value, sym.st_size, GELF_ST_BIND(sym.st_info) != STB_LOCAL});
  }
  return out;
}

// Index of the '(' matching the ')' at CLOSE, or npos.
size_t matching_open(std::string_view s, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (s[i] == ')') {
      ++depth;
    } else if (s[i] == '(' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

void erase_abi_tags(std::string& s) {
  for (size_t p; (p = s.find("[abi:")) != std::string::npos;) {
    const size_t e = s.find(']', p);
    if (e == std::string::npos) {
      break;
    }
    s.erase(p, e - p + 1);
  }
}

bool is_identifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

}  // namespace

Result<std::vector<FunctionSymbol>> read_function_symbols(const ElfFile& elf) {
  for (const char* name : {".symtab", ".dynsym"}) {
    Elf_Scn* scn = elf.section(name);
    GElf_Shdr shdr;
    if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) {
      continue;
    }
    auto syms = read_table(elf, scn);
    if (!syms.ok() || !syms->empty()) {
      return syms;
    }
  }
  return make_error(ErrorKind::kNotFound, elf.path() + ": no function symbols");
}

std::string demangle(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) {
    return mangled;
  }
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::string qualified_name(std::string_view demangled) {
  std::string_view s = demangled;
  // Trailing " [clone .isra.0]" pieces (possibly several).
  while (!s.empty() && s.back() == ']') {
    const size_t p = s.rfind(" [clone ");
    if (p == std::string_view::npos) {
      break;
    }
    s = s.substr(0, p);
  }
  const size_t close = s.rfind(')');
  if (close != std::string_view::npos) {
    const size_t open = matching_open(s, close);
    if (open != std::string_view::npos && open > 0) {
      s = s.substr(0, open);
    }
  }
  // A template function's demangled name starts with its return type: drop it.
  int depth = 0;
  size_t cut = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '{' || c == '[') {
      ++depth;
    } else if ((c == ')' || c == '>' || c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0 && !s.substr(0, i).ends_with("operator")) {
      cut = i + 1;
    }
  }
  std::string out(s.substr(cut));
  erase_abi_tags(out);
  return out;
}

bool is_clone(std::string_view mangled) {
  for (std::string_view tag : {".isra.", ".constprop.", ".part.", ".cold"}) {
    if (mangled.find(tag) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

std::string_view last_component(std::string_view q) {
  const size_t sep = scope_of(q).size();
  return sep == 0 ? q : q.substr(sep + 2);
}

std::string_view scope_of(std::string_view q) {
  int depth = 0;
  size_t last = std::string_view::npos;
  for (size_t i = 0; i + 1 < q.size(); ++i) {
    const char c = q[i];
    if (c == '<' || c == '(') {
      ++depth;
    } else if ((c == '>' || c == ')') && depth > 0) {
      --depth;
    } else if (c == ':' && q[i + 1] == ':' && depth == 0) {
      last = i;
      ++i;
    }
  }
  return last == std::string_view::npos ? std::string_view{} : q.substr(0, last);
}

SymbolIndex::SymbolIndex(std::vector<FunctionSymbol> symbols)
    : symbols_(std::move(symbols)), qualified_(symbols_.size()) {
  for (size_t i = 0; i < symbols_.size(); ++i) {
    auto [it, inserted] = by_addr_.try_emplace(symbols_[i].vaddr, i);
    if (!inserted) {
      const FunctionSymbol& old = symbols_[it->second];
      const FunctionSymbol& cur = symbols_[i];
      const bool better =
          (is_clone(old.mangled) && !is_clone(cur.mangled)) ||
          (is_clone(old.mangled) == is_clone(cur.mangled) && !old.global && cur.global);
      if (better) {
        it->second = i;
      }
    }
  }
}

const std::string& SymbolIndex::qualified(size_t i) {
  if (!qualified_[i]) {
    qualified_[i] = qualified_name(demangle(symbols_[i].mangled));
    ++demangled_count_;
  }
  return *qualified_[i];
}

std::vector<size_t> SymbolIndex::candidates(std::string_view ident) {
  std::vector<size_t> out;
  if (!is_identifier(ident)) {  // operators, templates: no cheap filter
    out.resize(symbols_.size());
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = i;
    }
    return out;
  }
  // Itanium mangling spells every identifier as <length><name>; C names appear as is.
  const std::string token = std::to_string(ident.size()) + std::string(ident);
  for (size_t i = 0; i < symbols_.size(); ++i) {
    const std::string& m = symbols_[i].mangled;
    if (m.find(token) != std::string::npos || m == ident) {
      out.push_back(i);
    }
  }
  return out;
}

std::vector<const FunctionSymbol*> SymbolIndex::named(std::string_view name) {
  std::vector<const FunctionSymbol*> out;
  for (size_t i : candidates(last_component(name))) {
    if (qualified(i) == name) {
      out.push_back(&symbols_[i]);
    }
  }
  return out;
}

std::vector<const FunctionSymbol*> SymbolIndex::in_scope(std::string_view scope) {
  std::vector<const FunctionSymbol*> out;
  const std::string prefix = std::string(scope) + "::";
  for (size_t i : candidates(last_component(scope))) {
    if (qualified(i).starts_with(prefix)) {
      out.push_back(&symbols_[i]);
    }
  }
  return out;
}

const FunctionSymbol* SymbolIndex::at(uint64_t vaddr) const {
  auto it = by_addr_.find(vaddr);
  return it == by_addr_.end() ? nullptr : &symbols_[it->second];
}

}  // namespace cephscope::profile
