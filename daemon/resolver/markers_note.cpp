#include "resolver/markers_note.h"

#include <elf.h>
#include <gelf.h>

#include <cstring>
#include <string_view>

namespace cephscope::profile {
namespace {

constexpr unsigned kStapsdtNoteType = 3;
constexpr std::size_t kAddressBytes = 8;  // pc, base and semaphore, in an ELFCLASS64 note

Error malformed(const ElfFile& binary, const std::string& why) {
  return make_error(ErrorKind::kInvalidInput, binary.path() + ": .note.stapsdt: " + why);
}

// The NUL-terminated string at *POS of DESC, moving *POS past it.
std::optional<std::string_view> next_string(std::string_view desc, std::size_t* pos) {
  const auto end = desc.find('\0', *pos);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view s = desc.substr(*pos, end - *pos);
  *pos = end + 1;
  return s;
}

std::optional<uint64_t> stapsdt_base(const ElfFile& binary) {
  Elf_Scn* scn = binary.section(".stapsdt.base");
  GElf_Shdr shdr;
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr) {
    return std::nullopt;
  }
  return shdr.sh_addr;
}

}  // namespace

Result<std::vector<Marker>> read_markers(const ElfFile& binary) {
  std::vector<Marker> out;
  Elf_Scn* scn = binary.section(".note.stapsdt");
  GElf_Shdr shdr;
  if (scn == nullptr || gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) {
    return out;
  }
  if (gelf_getclass(binary.elf()) != ELFCLASS64) {
    return malformed(binary, "only 64-bit notes are read");
  }
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) {
    return malformed(binary, "section unreadable");
  }
  const auto base = stapsdt_base(binary);
  const auto* bytes = static_cast<const char*>(data->d_buf);
  std::size_t offset = 0;
  GElf_Nhdr nhdr;
  std::size_t name_off = 0;
  std::size_t desc_off = 0;
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    const std::string_view owner(bytes + name_off, nhdr.n_namesz);
    if (nhdr.n_type != kStapsdtNoteType || owner != std::string_view("stapsdt\0", 8)) {
      continue;
    }
    if (out.size() == kMaxMarkers) {
      return malformed(binary, "more than " + std::to_string(kMaxMarkers) + " markers");
    }
    const std::string_view desc(bytes + desc_off, nhdr.n_descsz);
    if (desc.size() < 3 * kAddressBytes) {
      return malformed(binary, "a note shorter than its three addresses");
    }
    uint64_t pc = 0;
    uint64_t note_base = 0;
    uint64_t semaphore = 0;
    std::memcpy(&pc, desc.data(), kAddressBytes);
    std::memcpy(&note_base, desc.data() + kAddressBytes, kAddressBytes);
    std::memcpy(&semaphore, desc.data() + 2 * kAddressBytes, kAddressBytes);
    std::size_t pos = 3 * kAddressBytes;
    const auto provider = next_string(desc, &pos);
    const auto name = provider ? next_string(desc, &pos) : std::nullopt;
    const auto args = name ? next_string(desc, &pos) : std::nullopt;
    if (!args || !is_marker_name(*provider) || !is_marker_name(*name)) {
      return malformed(binary, "a note without a valid provider, name and argument string");
    }
    if (base && note_base != 0) {
      pc += *base - note_base;
      if (semaphore != 0) {
        semaphore += *base - note_base;
      }
    }
    Marker m;
    m.provider = *provider;
    m.name = *name;
    m.vaddr = pc;
    auto at = binary.vaddr_to_offset(pc);
    if (!at.ok()) {
      return malformed(binary, m.provider + ":" + m.name + ": " + at.error().message);
    }
    m.file_offset = *at;
    if (semaphore != 0) {
      auto sem = binary.vaddr_to_offset(semaphore);
      if (!sem.ok()) {
        return malformed(binary, m.provider + ":" + m.name + " semaphore: " + sem.error().message);
      }
      m.semaphore_offset = *sem;
    }
    m.arg_spec = std::string(args->substr(0, 255));
    auto decoded = parse_marker_args(*args);
    if (decoded.ok()) {
      m.args = std::move(decoded).value();
    } else {
      m.args_error = decoded.error().message.substr(0, 255);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace cephscope::profile
