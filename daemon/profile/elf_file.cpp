#include "profile/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace cephscope::profile {

namespace {

// libelf must be told which ELF version the caller speaks before any other call.
bool libelf_ready() {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  return ready;
}

Error elf_error(const std::string& path, const char* what) {
  return make_error(ErrorKind::kInvalidInput, path + ": " + what + ": " + elf_errmsg(-1));
}

// Build-id from a block of notes; empty when absent.
std::string build_id_in(Elf_Data* data) {
  GElf_Nhdr nhdr;
  size_t offset = 0;
  size_t name_off = 0;
  size_t desc_off = 0;
  while (offset < data->d_size &&
         (offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    const auto* base = static_cast<const uint8_t*>(data->d_buf);
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
        std::memcmp(base + name_off, "GNU", 4) == 0 && nhdr.n_descsz > 0) {
      return to_hex(base + desc_off, nhdr.n_descsz);
    }
  }
  return {};
}

}  // namespace

std::string to_hex(const uint8_t* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xf]);
  }
  return out;
}

std::string hex_u64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

Result<ElfFile> ElfFile::open(const std::string& path) {
  return from_fd(path, open_regular(path, SafeOpen{kMaxElfBytes}));
}

Result<ElfFile> ElfFile::open_in(int root_fd, const std::string& root_name,
                                 const std::string& path) {
  auto fd = open_in_root(root_fd, path, SafeOpen{kMaxElfBytes});
  if (!fd.ok()) {
    Error e = fd.error();
    e.message = root_name + e.message;  // "PATH: why" as the target names PATH
    return e;
  }
  return from_fd(root_name + path, std::move(fd));
}

Result<ElfFile> ElfFile::from_fd(const std::string& path, Result<UniqueFd> fd) {
  if (!libelf_ready()) {
    return make_error(ErrorKind::kUnsupported,
                      path + ": libelf does not support ELF version " + std::to_string(EV_CURRENT));
  }
  if (!fd.ok()) {
    return fd.error();
  }
  ElfFile f;
  f.path_ = path;
  f.fd_ = std::move(fd).value();
  struct stat st {};
  if (::fstat(f.fd_.get(), &st) != 0) {
    const int err = errno;
    return errno_error(path, err);
  }
  f.file_size_ = static_cast<uint64_t>(st.st_size);
  f.elf_.reset(elf_begin(f.fd_.get(), ELF_C_READ_MMAP, nullptr));
  if (!f.elf_ || elf_kind(f.elf_.get()) != ELF_K_ELF) {
    return make_error(ErrorKind::kInvalidInput, path + ": not an ELF file");
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(f.elf_.get(), &ehdr) == nullptr) {
    return elf_error(path, "bad ELF header");
  }
  f.machine_ = ehdr.e_machine;
  if (elf_getshdrstrndx(f.elf_.get(), &f.shstrndx_) != 0) {
    return elf_error(path, "no section name table");
  }
  size_t nphdr = 0;
  if (elf_getphdrnum(f.elf_.get(), &nphdr) != 0) {
    return elf_error(path, "bad program headers");
  }
  for (size_t i = 0; i < nphdr; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(f.elf_.get(), static_cast<int>(i), &phdr) == nullptr) {
      return elf_error(path, "bad program header");
    }
    if (phdr.p_type == PT_LOAD) {
      f.segments_.push_back(
          Segment{phdr.p_vaddr, phdr.p_memsz, phdr.p_offset, phdr.p_filesz, phdr.p_flags});
    }
  }
  return f;
}

Result<std::string> ElfFile::build_id() const {
  // Sections first (debug files keep .note.gnu.build-id), then PT_NOTE segments.
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_NOTE) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data != nullptr) {
      if (auto id = build_id_in(data); !id.empty()) {
        return id;
      }
    }
  }
  size_t nphdr = 0;
  if (elf_getphdrnum(elf(), &nphdr) == 0) {
    for (size_t i = 0; i < nphdr; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf(), static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE) {
        continue;
      }
      Elf_Data* data = elf_getdata_rawchunk(elf(), static_cast<int64_t>(phdr.p_offset),
                                            phdr.p_filesz, ELF_T_NHDR);
      if (data != nullptr) {
        if (auto id = build_id_in(data); !id.empty()) {
          return id;
        }
      }
    }
  }
  return make_error(ErrorKind::kNotFound, path_ + ": no build-id note");
}

std::optional<Debuglink> ElfFile::debuglink() const {
  Elf_Scn* scn = section(".gnu_debuglink");
  if (scn == nullptr) {
    return std::nullopt;
  }
  Elf_Data* data = elf_getdata(scn, nullptr);
  // d_buf is null for SHT_NOBITS: a size and no bytes.
  if (data == nullptr || data->d_buf == nullptr || data->d_size < 8) {
    return std::nullopt;
  }
  const auto* bytes = static_cast<const char*>(data->d_buf);
  const size_t len = strnlen(bytes, data->d_size);
  // The name, NUL, padding to 4, then a 4-byte CRC32 of the debug file.
  const size_t crc_off = (len + 4) & ~size_t{3};
  if (len == 0 || crc_off + 4 > data->d_size) {
    return std::nullopt;
  }
  Debuglink link;
  link.name.assign(bytes, len);
  std::memcpy(&link.crc, bytes + crc_off, 4);
  if (link.name.find('/') != std::string::npos) {
    return std::nullopt;  // a base name by definition; refuse path tricks from containers
  }
  return link;
}

Result<uint64_t> ElfFile::vaddr_to_offset(uint64_t vaddr) const {
  for (const Segment& s : segments_) {
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) {
      return vaddr - s.vaddr + s.offset;
    }
  }
  return make_error(ErrorKind::kNotFound,
                    path_ + ": address " + hex_u64(vaddr) + " is in no loadable segment");
}

Elf_Scn* ElfFile::section(std::string_view name) const {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      continue;
    }
    const char* n = elf_strptr(elf(), shstrndx_, shdr.sh_name);
    if (n != nullptr && name == n) {
      return scn;
    }
  }
  return nullptr;
}

bool ElfFile::has_data_section(std::string_view name) const {
  Elf_Scn* scn = section(name);
  GElf_Shdr shdr;
  return scn != nullptr && gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type != SHT_NOBITS &&
         shdr.sh_size > 0;
}

Result<std::vector<uint8_t>> ElfFile::read_at(uint64_t offset, size_t n) const {
  std::vector<uint8_t> buf(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t got =
        ::pread(fd_.get(), buf.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      const int err = errno;
      return errno_error(path_ + ": read at " + hex_u64(offset), err);
    }
    if (got == 0) {
      break;  // end of file
    }
    done += static_cast<size_t>(got);
  }
  buf.resize(done);
  return buf;
}

}  // namespace cephscope::profile
