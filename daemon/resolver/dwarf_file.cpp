#include "resolver/dwarf_file.h"

#include <elf.h>
#include <gelf.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <zlib.h>
#ifdef CEPHSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

namespace cephscope::profile {

namespace {

// What the resolver reads. .debug_line (the largest after .debug_info and .debug_loclists),
// .debug_frame and .debug_macro are not needed for addresses, layouts or locations.
constexpr std::string_view kWanted[] = {
    ".debug_info",       ".debug_abbrev",   ".debug_str",         ".debug_line_str",
    ".debug_addr",       ".debug_aranges",  ".debug_str_offsets", ".debug_rnglists",
    ".debug_ranges",     ".debug_loclists", ".debug_loc",         ".debug_types",
    ".gnu_debugaltlink",
};

// The largest ratio zlib can reach; a header claiming more is corrupt.
constexpr uint64_t kMaxZlibRatio = 1032;
constexpr uint64_t kMaxImageBytes = uint64_t{32} << 30;

struct Piece {
  std::string name;
  GElf_Shdr shdr{};
  const uint8_t* src = nullptr;  // raw bytes in the file mapping
  uint64_t src_size = 0;
  bool compressed = false;
  uint64_t size = 0;  // bytes in the image
  uint64_t align = 1;
  uint64_t image_offset = 0;
};

#ifdef CEPHSCOPE_HAVE_LIBDEFLATE
// libdeflate inflates 2-3x faster than zlib 1.2.13 and still checks the Adler-32 trailer.
bool inflate_into(const uint8_t* src, uint64_t src_size, char* dst, uint64_t dst_size) {
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> d(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  size_t out = 0;
  return d &&
         libdeflate_zlib_decompress(d.get(), src, src_size, dst, dst_size, &out) ==
             LIBDEFLATE_SUCCESS &&
         out == dst_size;
}
#else
bool inflate_into(const uint8_t* src, uint64_t src_size, char* dst, uint64_t dst_size) {
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) {
    return false;
  }
  // avail_in/avail_out are 32-bit: feed both in chunks.
  constexpr uint64_t kChunk = uint64_t{1} << 30;
  uint64_t in_done = 0;
  uint64_t out_done = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_done < src_size) {
      const uint64_t n = std::min(kChunk, src_size - in_done);
      zs.next_in = const_cast<Bytef*>(src + in_done);  // zlib's API is not const-correct
      zs.avail_in = static_cast<uInt>(n);
      in_done += n;
    }
    if (zs.avail_out == 0) {
      if (out_done == dst_size) {
        break;
      }
      const uint64_t n = std::min(kChunk, dst_size - out_done);
      zs.next_out = reinterpret_cast<Bytef*>(dst + out_done);
      zs.avail_out = static_cast<uInt>(n);
      out_done += n;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
  }
  const bool ok = rc == Z_STREAM_END && zs.total_out == dst_size;
  inflateEnd(&zs);
  return ok;
}
#endif

Result<std::vector<Piece>> collect_pieces(const ElfFile& file, bool* any_compressed) {
  std::vector<Piece> pieces;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(file.elf(), &shstrndx) != 0) {
    return make_error(ErrorKind::kInvalidInput, file.path() + ": no section name table");
  }
  *any_compressed = false;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(file.elf(), scn)) != nullptr) {
    Piece p;
    if (gelf_getshdr(scn, &p.shdr) == nullptr || p.shdr.sh_type == SHT_NOBITS) {
      continue;
    }
    const char* name = elf_strptr(file.elf(), shstrndx, p.shdr.sh_name);
    if (name == nullptr || std::find(std::begin(kWanted), std::end(kWanted),
                                     std::string_view(name)) == std::end(kWanted)) {
      continue;
    }
    p.name = name;
    Elf_Data* raw = elf_rawdata(scn, nullptr);
    if (raw == nullptr || raw->d_buf == nullptr) {
      return make_error(ErrorKind::kDwarf, file.path() + ": unreadable section " + p.name);
    }
    p.src = static_cast<const uint8_t*>(raw->d_buf);
    p.src_size = raw->d_size;
    p.compressed = (p.shdr.sh_flags & SHF_COMPRESSED) != 0;
    p.size = p.src_size;
    p.align = std::max<uint64_t>(p.shdr.sh_addralign, 1);
    if (p.compressed) {
      Elf64_Chdr chdr;
      if (p.src_size < sizeof chdr) {
        return make_error(ErrorKind::kDwarf, file.path() + ": truncated section " + p.name);
      }
      std::memcpy(&chdr, p.src, sizeof chdr);
      if (chdr.ch_type != ELFCOMPRESS_ZLIB) {
        return make_error(ErrorKind::kUnsupported, "compression type");
      }
      p.src += sizeof chdr;
      p.src_size -= sizeof chdr;
      p.size = chdr.ch_size;
      p.align = std::max<uint64_t>(chdr.ch_addralign, 1);
      if (p.size > p.src_size * kMaxZlibRatio + 64) {
        return make_error(ErrorKind::kDwarf, file.path() + ": corrupt compressed " + p.name);
      }
      *any_compressed = true;
    }
    if (p.align > 4096 || (p.align & (p.align - 1)) != 0) {
      return make_error(ErrorKind::kDwarf, file.path() + ": bad alignment in " + p.name);
    }
    pieces.push_back(std::move(p));
  }
  return pieces;
}

// What the debug sections take once inflated, as their headers say: SHF_COMPRESSED ones by
// their Chdr, GNU .zdebug ones by their "ZLIB" header, the rest by their size. Everything
// libdw might inflate is counted, not only what the image takes.
Result<uint64_t> inflated_size(const ElfFile& file) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(file.elf(), &shstrndx) != 0) {
    return make_error(ErrorKind::kInvalidInput, file.path() + ": no section name table");
  }
  uint64_t total = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(file.elf(), scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type == SHT_NOBITS) {
      continue;
    }
    const char* name = elf_strptr(file.elf(), shstrndx, shdr.sh_name);
    const std::string_view n = name != nullptr ? name : "";
    if (!n.starts_with(".debug") && !n.starts_with(".zdebug")) {
      continue;
    }
    uint64_t size = shdr.sh_size;
    if ((shdr.sh_flags & SHF_COMPRESSED) != 0) {
      GElf_Chdr chdr;
      if (gelf_getchdr(scn, &chdr) == nullptr) {
        return make_error(ErrorKind::kDwarf,
                          file.path() + ": bad compression header in " + std::string(n));
      }
      size = chdr.ch_size;
    } else if (n.starts_with(".zdebug")) {
      Elf_Data* raw = elf_rawdata(scn, nullptr);
      if (raw != nullptr && raw->d_buf != nullptr && raw->d_size >= 12 &&
          std::memcmp(raw->d_buf, "ZLIB", 4) == 0) {
        const auto* b = static_cast<const uint8_t*>(raw->d_buf) + 4;
        size = 0;
        for (int i = 0; i < 8; ++i) {
          size = (size << 8) | b[i];
        }
      }
    }
    if (size > kMaxImageBytes || total + size > kMaxImageBytes) {
      Error e = make_error(ErrorKind::kDwarf, file.path() + ": debug sections too large");
      e.reason = "too_large";
      return e;
    }
    total += size;
  }
  return total;
}

// Lays out ELF header, sections, .shstrtab and section headers in one image.
Result<MappedBuffer> build_image(const ElfFile& file, std::vector<Piece>& pieces,
                                 unsigned threads) {
  std::string shstrtab(1, '\0');
  std::vector<uint32_t> name_offsets;
  uint64_t off = sizeof(Elf64_Ehdr);
  for (Piece& p : pieces) {
    off = (off + p.align - 1) & ~(p.align - 1);
    p.image_offset = off;
    off += p.size;
    if (off > kMaxImageBytes) {
      return make_error(ErrorKind::kDwarf, file.path() + ": debug sections too large");
    }
    name_offsets.push_back(static_cast<uint32_t>(shstrtab.size()));
    shstrtab.append(p.name).push_back('\0');
  }
  const auto shstrtab_name = static_cast<uint32_t>(shstrtab.size());
  shstrtab.append(".shstrtab").push_back('\0');
  const uint64_t shstrtab_off = off;
  off += shstrtab.size();
  off = (off + 7) & ~uint64_t{7};
  const uint64_t shoff = off;
  const size_t shnum = pieces.size() + 2;
  off += shnum * sizeof(Elf64_Shdr);

  auto image = MappedBuffer::allocate(off);
  if (!image.ok()) {
    return image.error();
  }
  char* base = image->data();

  GElf_Ehdr src_ehdr;
  if (gelf_getehdr(file.elf(), &src_ehdr) == nullptr) {
    return make_error(ErrorKind::kInvalidInput,
                      file.path() + ": bad ELF header: " + elf_errmsg(-1));
  }
  Elf64_Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, src_ehdr.e_ident, EI_NIDENT);
  ehdr.e_type = src_ehdr.e_type;
  ehdr.e_machine = src_ehdr.e_machine;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_ehsize = sizeof(Elf64_Ehdr);
  ehdr.e_shentsize = sizeof(Elf64_Shdr);
  ehdr.e_shoff = shoff;
  ehdr.e_shnum = static_cast<uint16_t>(shnum);
  ehdr.e_shstrndx = static_cast<uint16_t>(shnum - 1);
  std::memcpy(base, &ehdr, sizeof ehdr);
  std::copy(shstrtab.begin(), shstrtab.end(), base + shstrtab_off);  // NUL-separated names

  std::vector<Elf64_Shdr> shdrs(shnum);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    Elf64_Shdr& s = shdrs[i + 1];
    s.sh_name = name_offsets[i];
    s.sh_type = p.shdr.sh_type;
    s.sh_flags = p.shdr.sh_flags & ~static_cast<uint64_t>(SHF_COMPRESSED);
    s.sh_offset = p.image_offset;
    s.sh_size = p.size;
    s.sh_addralign = p.align;
    s.sh_entsize = p.shdr.sh_entsize;
  }
  Elf64_Shdr& strsec = shdrs[shnum - 1];
  strsec.sh_name = shstrtab_name;
  strsec.sh_type = SHT_STRTAB;
  strsec.sh_offset = shstrtab_off;
  strsec.sh_size = shstrtab.size();
  strsec.sh_addralign = 1;
  std::memcpy(base + shoff, shdrs.data(), shnum * sizeof(Elf64_Shdr));

  // Largest first, so the one long inflate (.debug_info) starts at once.
  std::vector<size_t> order(pieces.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return pieces[a].src_size > pieces[b].src_size; });
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      const Piece& p = pieces[order[k]];
      char* dst = base + p.image_offset;
      if (!p.compressed) {
        std::memcpy(dst, p.src, p.size);
      } else if (!inflate_into(p.src, p.src_size, dst, p.size)) {
        failed = true;
      }
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    pool.emplace_back(work);
  }
  work();
  pool.clear();
  if (failed) {
    return make_error(ErrorKind::kDwarf, file.path() + ": corrupt compressed debug section");
  }
  return image;
}

std::string debugaltlink_name(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    return {};
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    const char* n = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name) : nullptr;
    if (n != nullptr && std::string_view(n) == ".gnu_debugaltlink") {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d != nullptr && d->d_buf != nullptr && d->d_size > 0) {  // null d_buf: SHT_NOBITS
        const auto* s = static_cast<const char*>(d->d_buf);
        return {s, strnlen(s, d->d_size)};
      }
    }
  }
  return {};
}

}  // namespace

Result<MappedBuffer> MappedBuffer::allocate(size_t size) {
  void* p = ::mmap(nullptr, std::max<size_t>(size, 1), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return errno_error("mmap", err);
  }
  // No MADV_HUGEPAGE: measured, its compaction at fault time costs 3x the sys time it saves.
  MappedBuffer b;
  b.data_ = static_cast<char*>(p);
  b.size_ = size;
  return b;
}

MappedBuffer::MappedBuffer(MappedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) {
      ::munmap(data_, std::max<size_t>(size_, 1));
    }
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedBuffer::~MappedBuffer() {
  if (data_ != nullptr) {
    ::munmap(data_, std::max<size_t>(size_, 1));
  }
}

Result<DwarfFile> DwarfFile::open(const std::string& path, const DwarfOpenOptions& options) {
  auto file = ElfFile::open(path);
  if (!file.ok()) {
    return file.error();
  }
  return open(std::move(file).value(), options, true);
}

Result<DwarfFile> DwarfFile::open(ElfFile file, const DwarfOpenOptions& options) {
  return open(std::move(file), options, true);
}

Result<DwarfFile> DwarfFile::open(ElfFile file, const DwarfOpenOptions& options, bool follow_alt) {
  const std::string path = file.path();
  if (!file.has_data_section(".debug_info")) {
    return make_error(ErrorKind::kDwarf, path + ": no DWARF (.debug_info absent)");
  }
  auto inflated = inflated_size(file);
  if (!inflated.ok()) {
    return inflated.error();
  }
  if (*inflated > options.max_inflated_bytes) {
    Error e =
        make_error(ErrorKind::kDwarf, path + ": debug sections inflate to " +
                                          std::to_string(*inflated) + " bytes, over the cap of " +
                                          std::to_string(options.max_inflated_bytes));
    e.reason = "too_large";
    return e;
  }
  DwarfFile out(std::move(file));
  bool compressed = false;
  auto pieces = collect_pieces(out.file_, &compressed);
  GElf_Ehdr ehdr;
  const bool elf64 =
      gelf_getehdr(out.file_.elf(), &ehdr) != nullptr && ehdr.e_ident[EI_CLASS] == ELFCLASS64;
  Elf* elf = out.file_.elf();
  if (pieces.ok() && compressed && elf64) {
    const unsigned threads =
        options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    auto image = build_image(out.file_, *pieces, threads);
    if (!image.ok()) {
      return image.error();
    }
    out.image_ = std::move(image).value();
    out.image_elf_.reset(elf_memory(out.image_.data(), out.image_.size()));
    if (!out.image_elf_) {
      return make_error(ErrorKind::kDwarf, path + ": " + elf_errmsg(-1));
    }
    elf = out.image_elf_.get();
  } else if (!pieces.ok() && pieces.error().kind != ErrorKind::kUnsupported) {
    return pieces.error();
  }
  // Otherwise (uncompressed, ELFCLASS32, zstd): libdw reads the file itself.
  out.dwarf_.reset(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
  if (!out.dwarf_) {
    return make_error(ErrorKind::kDwarf, path + ": " + dwarf_errmsg(-1));
  }
  // A dwz-compressed file points at a shared file of common DIEs; libdw cannot find it from
  // an in-memory image, so it is opened here, next to the debug file.
  if (std::string alt = follow_alt ? debugaltlink_name(elf) : ""; !alt.empty()) {
    const bool in_root = options.root_fd >= 0 && path.starts_with(options.root_name + "/");
    std::filesystem::path alt_path = alt;
    if (alt_path.is_relative()) {
      alt_path = std::filesystem::path(in_root ? path.substr(options.root_name.size()) : path)
                     .parent_path() /
                 alt_path;
    }
    // Inside a root, ".." stops at the root ("/.." is "/"), as it would for the target.
    auto alt_elf = in_root ? ElfFile::open_in(options.root_fd, options.root_name,
                                              alt_path.lexically_normal().string())
                           : ElfFile::open(alt_path.string());
    auto alt_file = alt_elf.ok() ? DwarfFile::open(std::move(alt_elf).value(), options, false)
                                 : Result<DwarfFile>(alt_elf.error());
    if (!alt_file.ok()) {
      // Still usable: what refers to the shared DIEs is reported per item.
      spdlog::warn("{}: .gnu_debugaltlink not opened: {}", path, alt_file.error().message);
    } else {
      out.alt_ = std::make_unique<DwarfFile>(std::move(alt_file).value());
      dwarf_setalt(out.dwarf_.get(), out.alt_->dwarf());
    }
  }
  return out;
}

}  // namespace cephscope::profile
