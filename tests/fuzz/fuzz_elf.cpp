// libFuzzer entry: ElfFile, the resolver's symbol and static-marker readers and the daemon's
// offset verifier (symbols, .eh_frame, capstone) over arbitrary bytes. A file is either refused
// with an error or read; nothing it holds may crash the reader or make it read outside the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "memfd_file.h"
#include "profile/elf_file.h"
#include "profile/verify.h"
#include "resolver/markers_note.h"
#include "resolver/symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cephscope::profile;
  static const cephscope::fuzz::MemfdFile file;
  file.assign(data, size);
  // The raw bytes as an .eh_frame section, and the whole file through the verifier.
  (void)eh_frame_function_starts({data, size}, 0x1000);
  if (auto verifier = OffsetVerifier::open(file.path()); verifier.ok()) {
    FunctionInstance f;
    f.vaddr = 0x1000;
    f.file_offset = 0x1000;
    f.size = 64;
    (void)verifier->check(f, 0x1010);
  }
  auto elf = ElfFile::open(file.path());
  if (!elf.ok()) {
    return 0;
  }
  (void)elf->build_id();
  (void)elf->debuglink();
  (void)elf->has_data_section(".debug_info");
  (void)elf->has_data_section(".gnu_debuglink");
  for (const Segment& s : elf->load_segments()) {
    (void)elf->vaddr_to_offset(s.vaddr);
    (void)elf->vaddr_to_offset(s.vaddr + s.filesz / 2);
    // Bytes at an offset the file itself names, as the resolver reads entry instructions.
    if (auto off = elf->vaddr_to_offset(s.vaddr); off.ok()) {
      (void)elf->read_at(*off, 16);
    }
  }
  // The notes, and the raw bytes as one argument spec string.
  (void)read_markers(*elf);
  (void)parse_marker_args(std::string_view(reinterpret_cast<const char*>(data), size));
  auto symbols = read_function_symbols(*elf);
  if (!symbols.ok()) {
    return 0;
  }
  size_t n = 0;
  for (const FunctionSymbol& s : *symbols) {
    if (++n > 64) {
      break;
    }
    (void)qualified_name(demangle(s.mangled));
    (void)is_clone(s.mangled);
  }
  SymbolIndex index(std::move(symbols).value());
  (void)index.named("fx::Derived::scale");
  (void)index.named("main");
  (void)index.in_scope("fx::Derived");
  (void)index.at(0x1000);
  return 0;
}
