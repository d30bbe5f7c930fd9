// A decompression bomb as a debug file: an ELF64 whose .debug_info is SHF_COMPRESSED (zlib)
// and inflates to INFLATED bytes of zeros from about INFLATED/1000 bytes on disk, a real
// stream (16 MiB of zeros deflated once, full-flushed, repeated), optionally carrying a
// build-id note so that a debug search takes it for a binary's debug file. Header-only: the
// profile and kernel tests both write one.
#pragma once

#include <elf.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cephscope::test {

inline std::vector<std::uint8_t> zero_block_deflated(std::size_t n) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::vector<std::uint8_t> in(n, 0);
  std::vector<std::uint8_t> out(deflateBound(&zs, n) + 64);
  zs.next_in = in.data();
  zs.avail_in = static_cast<uInt>(n);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FULL_FLUSH) != Z_OK || zs.avail_in != 0) {
    throw std::runtime_error("deflate");
  }
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  return out;
}

// Writes the bomb to PATH. BUILD_ID: lower-case hex, or "" for no note.
inline void write_elf_bomb(const std::string& path, std::uint64_t inflated,
                           const std::string& build_id = "") {
  constexpr std::uint64_t kChunk = std::uint64_t{16} << 20;
  if (inflated % kChunk != 0) {
    throw std::runtime_error("inflated size must be a multiple of 16 MiB");
  }
  const auto block = zero_block_deflated(kChunk);
  std::vector<std::uint8_t> debug_info(sizeof(Elf64_Chdr));
  Elf64_Chdr chdr{};
  chdr.ch_type = ELFCOMPRESS_ZLIB;
  chdr.ch_size = inflated;
  chdr.ch_addralign = 1;
  std::memcpy(debug_info.data(), &chdr, sizeof chdr);
  debug_info.push_back(0x78);  // zlib header
  debug_info.push_back(0xda);
  for (std::uint64_t i = 0; i < inflated / kChunk; ++i) {
    debug_info.insert(debug_info.end(), block.begin(), block.end());
  }
  debug_info.push_back(0x03);  // a final, empty fixed-Huffman block
  debug_info.push_back(0x00);
  const std::uint32_t adler = (static_cast<std::uint32_t>(inflated % 65521) << 16) | 1;
  for (int shift = 24; shift >= 0; shift -= 8) {
    debug_info.push_back(static_cast<std::uint8_t>(adler >> shift));
  }

  std::vector<std::uint8_t> note;
  if (!build_id.empty()) {
    std::vector<std::uint8_t> id;
    for (std::size_t i = 0; i + 1 < build_id.size(); i += 2) {
      id.push_back(static_cast<std::uint8_t>(std::stoul(build_id.substr(i, 2), nullptr, 16)));
    }
    Elf64_Nhdr nhdr{4, static_cast<Elf64_Word>(id.size()), NT_GNU_BUILD_ID};
    note.resize(sizeof nhdr);
    std::memcpy(note.data(), &nhdr, sizeof nhdr);
    note.insert(note.end(), {'G', 'N', 'U', '\0'});
    note.insert(note.end(), id.begin(), id.end());
    while (note.size() % 4 != 0) {
      note.push_back(0);
    }
  }
  static const char kNames[] = "\0.debug_info\0.note.gnu.build-id\0.shstrtab";
  const std::string shstrtab(kNames, sizeof kNames);
  // Layout: ehdr, .debug_info, .note, .shstrtab, section headers.
  std::vector<std::uint8_t> file(sizeof(Elf64_Ehdr));
  const std::uint64_t info_off = file.size();
  file.insert(file.end(), debug_info.begin(), debug_info.end());
  while (file.size() % 4 != 0) {
    file.push_back(0);
  }
  const std::uint64_t note_off = file.size();
  file.insert(file.end(), note.begin(), note.end());
  const std::uint64_t str_off = file.size();
  file.insert(file.end(), shstrtab.begin(), shstrtab.end());
  while (file.size() % 8 != 0) {
    file.push_back(0);
  }
  const std::uint64_t sh_off = file.size();
  Elf64_Shdr sh[4]{};
  sh[1].sh_name = 1;
  sh[1].sh_type = SHT_PROGBITS;
  sh[1].sh_flags = SHF_COMPRESSED;
  sh[1].sh_offset = info_off;
  sh[1].sh_size = debug_info.size();
  sh[1].sh_addralign = 1;
  sh[2].sh_name = 13;
  sh[2].sh_type = note.empty() ? SHT_PROGBITS : SHT_NOTE;
  sh[2].sh_offset = note_off;
  sh[2].sh_size = note.size();
  sh[2].sh_addralign = 4;
  sh[3].sh_name = 32;
  sh[3].sh_type = SHT_STRTAB;
  sh[3].sh_offset = str_off;
  sh[3].sh_size = shstrtab.size();
  sh[3].sh_addralign = 1;
  const auto* shp = reinterpret_cast<const std::uint8_t*>(sh);
  file.insert(file.end(), shp, shp + sizeof sh);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof eh;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shoff = sh_off;
  eh.e_shnum = 4;
  eh.e_shstrndx = 3;
  std::memcpy(file.data(), &eh, sizeof eh);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

}  // namespace cephscope::test
