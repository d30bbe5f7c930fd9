// DwarfFile: a libdw handle on a debug file, opened fast.
//
// libdw inflates every compressed debug section, one after the other, when it opens a file
// (3.5 s and 830 MB for ceph-osd's debug file). Here the sections the resolver reads are
// inflated in parallel, straight into one in-memory ELF image (.debug_line, .debug_frame and
// .debug_macro are left out), which libdw then opens without copying.
#pragma once

#include <elfutils/libdw.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "profile/elf_file.h"

namespace cephscope::profile {

// An anonymous private mapping: pages cost nothing until written, so an image can be sized
// from the section headers before anything is inflated.
class MappedBuffer {
 public:
  MappedBuffer() = default;
  static Result<MappedBuffer> allocate(size_t size);
  MappedBuffer(MappedBuffer&& other) noexcept;
  MappedBuffer& operator=(MappedBuffer&& other) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  ~MappedBuffer();

  [[nodiscard]] char* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

// The most the debug sections of one file may take once inflated, as their headers claim:
// ceph-osd's take 830 MB. A file over it is refused before anything is inflated (reason
// "too_large"), so a small file claiming gigabytes (a decompression bomb) costs nothing.
inline constexpr uint64_t kDefaultMaxInflatedBytes = uint64_t{2} << 30;

struct DwarfOpenOptions {
  unsigned threads = 0;  // 0: one per online CPU
  uint64_t max_inflated_bytes = kDefaultMaxInflatedBytes;
  // A debug file inside a target's root (ROOT_NAME + path): its .gnu_debugaltlink file is
  // opened inside ROOT_FD too. -1: a host file.
  int root_fd = -1;
  std::string root_name;
};

class DwarfFile {
 public:
  static Result<DwarfFile> open(const std::string& path, const DwarfOpenOptions& options = {});
  // The same, on a file already opened (ElfFile::open_in: inside a target's root).
  static Result<DwarfFile> open(ElfFile file, const DwarfOpenOptions& options = {});

  DwarfFile(DwarfFile&&) noexcept = default;
  DwarfFile& operator=(DwarfFile&&) noexcept = default;
  DwarfFile(const DwarfFile&) = delete;
  DwarfFile& operator=(const DwarfFile&) = delete;
  ~DwarfFile() = default;

  [[nodiscard]] Dwarf* dwarf() const { return dwarf_.get(); }
  [[nodiscard]] const ElfFile& file() const { return file_; }
  [[nodiscard]] size_t inflated_bytes() const { return image_.size(); }

 private:
  struct ElfEnd {
    void operator()(Elf* e) const { elf_end(e); }
  };
  struct DwarfEnd {
    void operator()(Dwarf* d) const { dwarf_end(d); }
  };
  explicit DwarfFile(ElfFile file) : file_(std::move(file)) {}
  // FOLLOW_ALT: open the file .gnu_debugaltlink names. Never for that file itself (a dwz
  // common file names none), so a link to itself or a cycle cannot recurse.
  static Result<DwarfFile> open(ElfFile file, const DwarfOpenOptions& options, bool follow_alt);

  // Destruction runs bottom-up: the Dwarf handles, then the ELF views, then the bytes.
  ElfFile file_;
  MappedBuffer image_;
  std::unique_ptr<Elf, ElfEnd> image_elf_;
  std::unique_ptr<DwarfFile> alt_;  // the dwz file named by .gnu_debugaltlink, if any
  std::unique_ptr<Dwarf, DwarfEnd> dwarf_;
};

}  // namespace cephscope::profile
