#include "profile/verify.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "profile/elf_file.h"

namespace cephscope::profile {
namespace {

// A bounds-checked reader over .eh_frame bytes.
class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> data, std::size_t at) : data_(data), at_(at) {}
  [[nodiscard]] std::size_t at() const { return at_; }
  [[nodiscard]] bool ok() const { return ok_; }

  template <typename T>
  T fixed() {
    T v{};
    if (!ok_ || data_.size() - at_ < sizeof(T) || at_ > data_.size()) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::uint64_t uleb() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      const auto b = fixed<std::uint8_t>();
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0 || !ok_) {
        return v;
      }
    }
    ok_ = false;
    return v;
  }
  std::int64_t sleb() {
    // Unsigned arithmetic: the sign extension of a 63-bit shift must not negate INT64_MIN
    // (found by fuzz_elf).
    std::uint64_t v = 0;
    unsigned shift = 0;
    std::uint8_t b = 0x80;
    while ((b & 0x80) != 0 && shift < 64 && ok_) {
      b = fixed<std::uint8_t>();
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
    }
    if (shift < 64 && (b & 0x40) != 0) {
      v |= ~std::uint64_t{0} << shift;
    }
    return static_cast<std::int64_t>(v);
  }
  std::string_view cstring() {
    const auto* begin = data_.data() + std::min(at_, data_.size());
    const auto* end = data_.data() + data_.size();
    const auto* nul = std::find(begin, end, std::uint8_t{0});
    if (nul == end) {
      ok_ = false;
      return {};
    }
    at_ += static_cast<std::size_t>(nul - begin) + 1;
    return {reinterpret_cast<const char*>(begin), static_cast<std::size_t>(nul - begin)};
  }
  // A pointer in DW_EH_PE encoding ENC; nullopt for encodings this reader does not take.
  std::optional<std::uint64_t> pointer(std::uint8_t enc, std::uint64_t section_vaddr) {
    constexpr std::uint8_t kOmit = 0xff;
    if (enc == kOmit) {
      return std::nullopt;
    }
    const std::uint64_t field = section_vaddr + at_;
    std::uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00:
        v = fixed<std::uint64_t>();
        break;  // absptr
      case 0x01:
        v = uleb();
        break;  // uleb128
      case 0x02:
        v = fixed<std::uint16_t>();
        break;  // udata2
      case 0x03:
        v = fixed<std::uint32_t>();
        break;  // udata4
      case 0x04:
        v = fixed<std::uint64_t>();
        break;  // udata8
      case 0x09:
        v = static_cast<std::uint64_t>(sleb());
        break;  // sleb128
      case 0x0a:
        v = static_cast<std::uint64_t>(fixed<std::int16_t>());
        break;  // sdata2
      case 0x0b:
        v = static_cast<std::uint64_t>(fixed<std::int32_t>());
        break;  // sdata4
      case 0x0c:
        v = fixed<std::uint64_t>();
        break;  // sdata8
      default:
        return std::nullopt;
    }
    switch (enc & 0x70) {
      case 0x00:
        return v;
      case 0x10:
        return v + field;  // pcrel
      default:
        return std::nullopt;  // textrel, datarel, funcrel, aligned: not in x86-64 code
    }
  }
  void skip_to(std::size_t at) { at_ = std::min(at, data_.size()); }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t at_;
  bool ok_ = true;
};

// The FDE pointer encoding a CIE declares ('R' in a "z" augmentation), nullopt when the CIE
// cannot be read.
std::optional<std::uint8_t> cie_fde_encoding(std::span<const std::uint8_t> data, std::size_t at,
                                             std::uint64_t section_vaddr) {
  Cursor c(data, at);
  const auto version = c.fixed<std::uint8_t>();
  const std::string_view aug = c.cstring();
  c.uleb();  // code alignment
  c.sleb();  // data alignment
  if (version == 1) {
    c.fixed<std::uint8_t>();
  } else {
    c.uleb();  // return address register
  }
  std::uint8_t enc = 0x00;  // absptr unless 'R' says otherwise
  if (aug.starts_with('z')) {
    c.uleb();  // augmentation data length
    for (char a : aug.substr(1)) {
      if (a == 'R') {
        enc = c.fixed<std::uint8_t>();
      } else if (a == 'L') {
        c.fixed<std::uint8_t>();
      } else if (a == 'P') {
        const auto penc = c.fixed<std::uint8_t>();
        if (!c.pointer(penc & 0x7f, section_vaddr)) {
          return std::nullopt;
        }
      } else if (a != 'S' && a != 'B' && a != 'G') {
        return std::nullopt;
      }
    }
  } else if (!aug.empty()) {
    return std::nullopt;
  }
  return c.ok() ? std::optional(enc) : std::nullopt;
}

std::vector<std::uint64_t> sorted_unique(std::vector<std::uint64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// STT_FUNC (and IFUNC) starts of .symtab and .dynsym.
std::vector<std::uint64_t> symbol_function_starts(const ElfFile& elf) {
  std::vector<std::uint64_t> out;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf.elf(), scn)) != nullptr) {
    GElf_Shdr shdr{};
    if (gelf_getshdr(scn, &shdr) == nullptr ||
        (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) || shdr.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) {
      continue;
    }
    const std::size_t count = data->d_size / shdr.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Sym sym{};
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
        break;
      }
      const int type = GELF_ST_TYPE(sym.st_info);
      if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_shndx != SHN_UNDEF &&
          sym.st_value != 0) {
        out.push_back(sym.st_value);
      }
    }
  }
  return sorted_unique(std::move(out));
}

std::vector<std::uint64_t> fde_function_starts(const ElfFile& elf) {
  Elf_Scn* scn = elf.section(".eh_frame");
  GElf_Shdr shdr{};
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) {
    return {};
  }
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) {
    return {};
  }
  return eh_frame_function_starts({static_cast<const std::uint8_t*>(data->d_buf), data->d_size},
                                  shdr.sh_addr);
}

}  // namespace

std::vector<std::uint64_t> eh_frame_function_starts(std::span<const std::uint8_t> data,
                                                    std::uint64_t section_vaddr) {
  std::vector<std::uint64_t> out;
  Cursor c(data, 0);
  while (c.ok() && c.at() < data.size()) {
    const std::uint64_t length = c.fixed<std::uint32_t>();
    // The terminator or the end; 64-bit records (0xffffffff) are not made for x86-64 code.
    if (!c.ok() || length == 0 || length == 0xffffffff) {
      break;
    }
    const std::size_t body = c.at();
    if (length > data.size() - body) {
      break;
    }
    const std::size_t next = body + length;
    const auto id = c.fixed<std::uint32_t>();
    if (id != 0 && id <= body) {  // an FDE: id is the distance back to its CIE
      const std::size_t cie = body - id;
      Cursor cie_len(data, cie);
      const auto cie_length = cie_len.fixed<std::uint32_t>();
      if (cie_len.ok() && cie_length != 0 && cie_length != 0xffffffff &&
          cie_len.fixed<std::uint32_t>() == 0 && cie_len.ok()) {
        if (auto enc = cie_fde_encoding(data, cie_len.at(), section_vaddr)) {
          if (auto pc = c.pointer(*enc, section_vaddr); pc && c.ok() && *pc != 0) {
            out.push_back(*pc);
          }
        }
      }
    }
    c.skip_to(next);
  }
  return sorted_unique(std::move(out));
}

OffsetVerifier::OffsetVerifier(ElfFile elf, X86Decoder decoder)
    : elf_(std::move(elf)), decoder_(std::move(decoder)) {}
OffsetVerifier::OffsetVerifier(OffsetVerifier&&) noexcept = default;
OffsetVerifier& OffsetVerifier::operator=(OffsetVerifier&&) noexcept = default;
OffsetVerifier::~OffsetVerifier() = default;

Result<OffsetVerifier> OffsetVerifier::open(const std::string& binary_path) {
  auto elf = ElfFile::open(binary_path);
  if (!elf.ok()) {
    return elf.error();
  }
  if (elf->machine() != EM_X86_64) {
    return make_error(ErrorKind::kUnsupported, binary_path + ": not an x86-64 binary");
  }
  auto decoder = X86Decoder::open();
  if (!decoder.ok()) {
    return decoder.error();
  }
  OffsetVerifier v(std::move(elf).value(), std::move(decoder).value());
  v.symbols_ = symbol_function_starts(v.elf_);
  v.fdes_ = fde_function_starts(v.elf_);
  if (v.symbols_.empty() && v.fdes_.empty()) {
    return make_error(ErrorKind::kInvalidInput,
                      binary_path + " declares no function start (no symbol, no .eh_frame FDE)");
  }
  return v;
}

bool OffsetVerifier::declared(std::uint64_t vaddr) const {
  return std::binary_search(symbols_.begin(), symbols_.end(), vaddr) ||
         std::binary_search(fdes_.begin(), fdes_.end(), vaddr);
}

Status OffsetVerifier::check(const FunctionInstance& function,
                             std::uint64_t probe_file_offset) const {
  auto refuse = [&](const std::string& why) {
    Error e = make_error(ErrorKind::kInvalidInput, why);
    e.reason = "offset_unverified";
    return e;
  };
  if (!declared(function.vaddr)) {
    return refuse("no function starts at " + hex_u64(function.vaddr) + " in " + elf_.path() +
                  " (.symtab, .dynsym, .eh_frame)");
  }
  auto start = elf_.vaddr_to_offset(function.vaddr);
  if (!start.ok() || *start != function.file_offset) {
    return refuse("file offset " + hex_u64(function.file_offset) + " is not where " +
                  hex_u64(function.vaddr) + " lies in " + elf_.path());
  }
  if (probe_file_offset < function.file_offset ||
      probe_file_offset - function.file_offset > kMaxVerifiedFunctionBytes) {
    return refuse("probe offset " + hex_u64(probe_file_offset) + " is outside the function at " +
                  hex_u64(function.vaddr));
  }
  const std::uint64_t distance = probe_file_offset - function.file_offset;
  // Decode up to and including the instruction at the probe.
  constexpr std::size_t kMaxInsn = 15;
  auto bytes = elf_.read_at(function.file_offset, distance + kMaxInsn);
  if (!bytes.ok()) {
    return bytes.error();
  }
  if (Status at = decoder_.boundary(*bytes, function.vaddr, distance); !at.ok()) {
    return refuse("probe offset: " + at.error().message);
  }
  return ok_status();
}

}  // namespace cephscope::profile
