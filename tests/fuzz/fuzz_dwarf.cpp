// libFuzzer entry: the DWARF reader. The input is opened as a debug file (DwarfFile inflates
// its compressed sections into an image for libdw) and, being also the binary, resolved
// against the resolver fixture's probe set: the unit scan, type layouts and parameter
// locations all run on what the mutated .debug_info says.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "memfd_file.h"
#include "profile/elf_file.h"
#include "profile/probe_set.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"

namespace {
const cephscope::profile::ProbeSet* probe_set = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  auto set = cephscope::profile::load_probe_set(FUZZ_PROBE_SET);
  if (!set.ok()) {
    std::abort();
  }
  probe_set = new cephscope::profile::ProbeSet(std::move(set).value());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cephscope::profile;
  static const cephscope::fuzz::MemfdFile file;
  file.assign(data, size);
  auto binary = ElfFile::open(file.path());
  if (!binary.ok()) {
    return 0;
  }
  auto debug = DwarfFile::open(file.path(), DwarfOpenOptions{.threads = 2});
  (void)resolve_profile(*binary, debug.ok() ? &*debug : nullptr, *probe_set);
  return 0;
}
