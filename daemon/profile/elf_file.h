// ElfFile: one ELF object opened read-only (fd + libelf handle), with the few facts the
// resolver needs: build-id, .gnu_debuglink, loadable segments (vaddr -> file offset) and
// sections. Files can come from containers, so every read is bounds-checked by libelf.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/safe_file.h"
#include "core/unique_fd.h"

namespace cephscope::profile {

struct Segment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
};

struct Debuglink {
  std::string name;
  uint32_t crc = 0;
};

class ElfFile {
 public:
  // The largest file opened: a regular file over it is refused (core/safe_file.h).
  static constexpr uint64_t kMaxElfBytes = uint64_t{16} << 30;

  // Opens PATH (any path, including /proc/PID/root/... and /proc/PID/map_files/...), if it is
  // a regular file: a FIFO or device in its place is refused, never opened.
  static Result<ElfFile> open(const std::string& path);
  // Opens PATH as a process whose root is ROOT_FD sees it: symlinks and ".." stay inside the
  // root (core/safe_file.h). ROOT_NAME prefixes PATH in messages and path().
  static Result<ElfFile> open_in(int root_fd, const std::string& root_name,
                                 const std::string& path);

  ElfFile(ElfFile&&) noexcept = default;
  ElfFile& operator=(ElfFile&&) noexcept = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() = default;

  [[nodiscard]] Elf* elf() const { return elf_.get(); }
  [[nodiscard]] int fd() const { return fd_.get(); }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] uint64_t file_size() const { return file_size_; }
  [[nodiscard]] uint16_t machine() const { return machine_; }

  // Lower-case hex of the NT_GNU_BUILD_ID note; kNotFound when there is none.
  [[nodiscard]] Result<std::string> build_id() const;
  [[nodiscard]] std::optional<Debuglink> debuglink() const;

  [[nodiscard]] const std::vector<Segment>& load_segments() const { return segments_; }
  // The uprobe offset of VADDR: where the byte lives in the file, from the PT_LOAD that
  // maps it. Never assumes vaddr == offset.
  [[nodiscard]] Result<uint64_t> vaddr_to_offset(uint64_t vaddr) const;

  // The named section, or nullptr; SHT_NOBITS sections are returned too (check the type).
  [[nodiscard]] Elf_Scn* section(std::string_view name) const;
  // True when NAME exists and carries bytes (not SHT_NOBITS, non-empty).
  [[nodiscard]] bool has_data_section(std::string_view name) const;

  // Reads N bytes of the file at OFFSET, fewer only at end of file.
  [[nodiscard]] Result<std::vector<uint8_t>> read_at(uint64_t offset, size_t n) const;

 private:
  struct ElfEnd {
    void operator()(Elf* e) const { elf_end(e); }
  };
  ElfFile() = default;
  static Result<ElfFile> from_fd(const std::string& path, Result<UniqueFd> fd);

  UniqueFd fd_;
  std::unique_ptr<Elf, ElfEnd> elf_;
  std::string path_;
  uint64_t file_size_ = 0;
  uint16_t machine_ = 0;
  size_t shstrndx_ = 0;
  std::vector<Segment> segments_;
};

std::string to_hex(const uint8_t* data, size_t n);
std::string hex_u64(uint64_t v);  // "0x1f40"

}  // namespace cephscope::profile
