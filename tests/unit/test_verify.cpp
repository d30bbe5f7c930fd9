// profile/verify.h against a real binary: tests/kernel/fake_osd (static glibc) stripped of
// every symbol, so that its functions are declared by .eh_frame alone; objdump, a disassembler
// of its own, gives the instruction boundaries to compare with.
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "profile/elf_file.h"
#include "profile/verify.h"

using namespace cephscope;
using namespace cephscope::profile;
namespace fs = std::filesystem;

namespace {

std::string output_of(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) {
    out += buf.data();
  }
  REQUIRE(pclose(p) == 0);
  return out;
}

// vaddr and size of a defined function symbol, from nm.
std::pair<std::uint64_t, std::uint64_t> symbol(const std::string& binary, const std::string& name) {
  std::istringstream in(output_of("nm -S --defined-only " + binary));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);  // "addr size type name"; symbols without a size have 3
    std::string addr;
    std::string size;
    std::string type;
    std::string sym;
    if ((fields >> addr >> size >> type >> sym) && sym == name) {
      return {std::stoull(addr, nullptr, 16), std::stoull(size, nullptr, 16)};
    }
  }
  FAIL("no symbol " << name << " in " << binary);
  return {};
}

// The instruction addresses objdump decodes in [start, start + size).
std::vector<std::uint64_t> boundaries(const std::string& binary, std::uint64_t start,
                                      std::uint64_t size) {
  std::istringstream in(
      output_of("objdump -d --no-show-raw-insn --start-address=" + std::to_string(start) +
                " --stop-address=" + std::to_string(start + size) + " " + binary));
  std::vector<std::uint64_t> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(":\t");
    if (colon == std::string::npos || line.empty() || line[0] != ' ') {
      continue;
    }
    out.push_back(std::stoull(line.substr(0, colon), nullptr, 16));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "probe offsets are checked against the binary: function starts and instruction "
    "boundaries",
    "[verify]") {
  const std::string original = CEPHSCOPE_FAKE_OSD;
  const fs::path dir = fs::temp_directory_path() / ("cephscope-verify-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string stripped = (dir / "fake_osd.nosyms").string();
  output_of("objcopy --strip-all " + original + " " + stripped);

  auto v = OffsetVerifier::open(stripped);
  REQUIRE(v.ok());
  CHECK(v->symbol_starts() == 0);  // stripped: .eh_frame alone declares functions
  CHECK(v->fde_starts() > 100);
  auto elf = ElfFile::open(stripped);
  REQUIRE(elf.ok());

  const auto [vaddr, size] = symbol(original, "malloc");
  const auto insns = boundaries(original, vaddr, size);
  REQUIRE(insns.size() > 10);
  REQUIRE(insns.front() == vaddr);
  FunctionInstance f;
  f.vaddr = vaddr;
  f.size = size;
  auto offset = elf->vaddr_to_offset(vaddr);
  REQUIRE(offset.ok());
  f.file_offset = *offset;
  CHECK(v->declared(vaddr));

  // Every boundary objdump sees is one capstone reaches from the start.
  for (std::uint64_t at : insns) {
    INFO("instruction at 0x" << std::hex << at);
    CHECK(v->check(f, f.file_offset + (at - vaddr)).ok());
  }
  // One byte into an instruction longer than one byte: refused.
  std::uint64_t inside = 0;
  for (std::size_t i = 0; i + 1 < insns.size() && inside == 0; ++i) {
    if (insns[i + 1] - insns[i] >= 2) {
      inside = insns[i] + 1;
    }
  }
  REQUIRE(inside != 0);
  const Status mid = v->check(f, f.file_offset + (inside - vaddr));
  REQUIRE_FALSE(mid.ok());
  CHECK(mid.error().reason == "offset_unverified");
  CHECK(mid.error().message.find("inside an instruction") != std::string::npos);

  // A function said to start where the binary declares none: refused.
  FunctionInstance moved = f;
  moved.vaddr = insns[3];
  moved.file_offset = f.file_offset + (insns[3] - vaddr);
  CHECK_FALSE(v->declared(moved.vaddr));
  const Status undeclared = v->check(moved, moved.file_offset);
  REQUIRE_FALSE(undeclared.ok());
  CHECK(undeclared.error().message.find("no function starts at") != std::string::npos);

  // A file offset that is not where the vaddr lies: refused.
  FunctionInstance shifted = f;
  shifted.file_offset += 16;
  CHECK_FALSE(v->check(shifted, shifted.file_offset).ok());

  // A probe outside the function's reach: refused.
  CHECK_FALSE(v->check(f, f.file_offset - 1).ok());
  fs::remove_all(dir);
}

TEST_CASE("the .eh_frame reader survives what a hostile file holds", "[verify]") {
  // Truncated, zero-length, self-referencing and random records give no start or a few, and
  // never read past the end.
  std::vector<std::uint8_t> data = {0x14, 0,    0,    0, 0,    0, 0, 0, 1, 'z', 'R', 0,
                                    1,    0x78, 0x10, 1, 0x1b, 0, 0, 0, 0, 0,   0,   0};
  // an FDE pointing back at the CIE: length 16, id 28 (its distance back), pc_begin pcrel 0x100
  const std::vector<std::uint8_t> fde = {0x10, 0, 0,    0, 0x1c, 0, 0, 0, 0x00, 0x01,
                                         0,    0, 0x20, 0, 0,    0, 0, 0, 0,    0};
  data.insert(data.end(), fde.begin(), fde.end());
  const auto starts = eh_frame_function_starts(data, 0x1000);
  REQUIRE(starts.size() == 1);
  CHECK(starts[0] == 0x1000 + 24 + 8 + 0x100);  // pcrel: the field's own address plus 0x100
  for (std::size_t cut = 0; cut < data.size(); ++cut) {
    (void)eh_frame_function_starts(std::span(data).first(cut), 0x1000);
  }
  std::vector<std::uint8_t> noise(4096);
  std::uint32_t x = 12345;
  for (auto& b : noise) {
    x = x * 1103515245 + 12345;
    b = static_cast<std::uint8_t>(x >> 16);
  }
  CHECK(eh_frame_function_starts(noise, 0).size() < 64);
}
