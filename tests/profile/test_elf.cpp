// ELF reading, debuginfo search and DWARF opening, including broken inputs.
#include <catch2/catch.hpp>
#include <filesystem>

#include "fixture_util.h"
#include "profile/elf_file.h"
#include "resolver/debuginfo.h"
#include "resolver/dwarf_file.h"

using namespace cephscope::profile;
namespace fs = std::filesystem;

namespace {

std::string readelf_build_id(const std::string& path) {
  const std::string out = test::run("readelf -n " + path + " 2>/dev/null");
  const size_t p = out.find("Build ID: ");
  return p == std::string::npos ? "" : out.substr(p + 10, out.find('\n', p) - p - 10);
}

void copy_prefix(const std::string& from, const std::string& to, size_t bytes) {
  test::write_file(to, test::read_file(from).substr(0, bytes));
}

}  // namespace

TEST_CASE("build-id matches readelf", "[unit][elf]") {
  for (const char* path : {FIXTURE_O0, FIXTURE_O2, FIXTURE_O2_STRIPPED, FIXTURE_O2_DEBUG}) {
    INFO(path);
    auto elf = ElfFile::open(path);
    REQUIRE(elf.ok());
    auto id = elf->build_id();
    REQUIRE(id.ok());
    CHECK(*id == readelf_build_id(path));
  }
  // The split halves share one build-id, and the stripped half names the other.
  CHECK(*ElfFile::open(FIXTURE_O2_STRIPPED)->build_id() ==
        *ElfFile::open(FIXTURE_O2_DEBUG)->build_id());
  auto link = ElfFile::open(FIXTURE_O2_STRIPPED)->debuglink();
  REQUIRE(link.has_value());
  CHECK(link->name == fs::path(FIXTURE_O2_DEBUG).filename().string());
}

TEST_CASE("addresses outside loadable segments are refused", "[unit][elf]") {
  auto elf = ElfFile::open(FIXTURE_O2);
  REQUIRE(elf.ok());
  CHECK_FALSE(elf->load_segments().empty());
  CHECK_FALSE(elf->vaddr_to_offset(uint64_t{1} << 46).ok());
}

TEST_CASE("bytes are read at a file offset, fewer only at end of file", "[unit][elf]") {
  auto elf = ElfFile::open(FIXTURE_O2);
  REQUIRE(elf.ok());
  const std::string file = test::read_file(FIXTURE_O2);
  auto head = elf->read_at(0, 64);
  REQUIRE(head.ok());
  CHECK(std::string(head->begin(), head->end()) == file.substr(0, 64));
  auto tail = elf->read_at(file.size() - 10, 64);
  REQUIRE(tail.ok());
  CHECK(tail->size() == 10);
  auto past = elf->read_at(file.size() + 4096, 16);
  REQUIRE(past.ok());
  CHECK(past->empty());
}

TEST_CASE("broken files give errors, not crashes", "[unit][elf]") {
  test::TempDir dir;
  const std::string original = FIXTURE_O2;
  const size_t size = fs::file_size(original);

  SECTION("missing") {
    auto e = ElfFile::open(dir / "nothing");
    REQUIRE_FALSE(e.ok());
    CHECK(e.error().kind == cephscope::ErrorKind::kNotFound);
  }
  SECTION("empty and garbage") {
    test::write_file(dir / "empty", "");
    test::write_file(dir / "garbage", std::string(4096, 'x'));
    for (const char* name : {"empty", "garbage"}) {
      auto e = ElfFile::open(dir / name);
      REQUIRE_FALSE(e.ok());
      CHECK(e.error().message.find("not an ELF file") != std::string::npos);
    }
  }
  SECTION("truncated ELF") {
    for (size_t cut : {size_t{16}, size_t{64}, size_t{1000}, size / 2, size - 1}) {
      INFO("cut at " << cut);
      copy_prefix(original, dir / "cut", cut);
      auto e = ElfFile::open(dir / "cut");
      if (e.ok()) {
        // Whatever opened must fail cleanly further on.
        (void)e->build_id();
        CHECK_FALSE(DwarfFile::open(dir / "cut").ok());
      }
    }
  }
  SECTION("truncated compressed debug file") {
    const size_t dsize = fs::file_size(FIXTURE_O2_DEBUG);
    for (size_t cut : {dsize / 3, dsize / 2, dsize - 100}) {
      INFO("cut at " << cut);
      copy_prefix(FIXTURE_O2_DEBUG, dir / "cut.debug", cut);
      auto d = DwarfFile::open(dir / "cut.debug");
      CHECK_FALSE(d.ok());
    }
  }
  SECTION("ELF without DWARF") {
    auto d = DwarfFile::open(FIXTURE_O2_STRIPPED);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().kind == cephscope::ErrorKind::kDwarf);
    CHECK(d.error().message.find("no DWARF") != std::string::npos);
  }
}

TEST_CASE("compressed and plain DWARF open alike", "[unit][dwarf]") {
  auto plain = DwarfFile::open(FIXTURE_O2);
  DwarfOpenOptions two_threads;
  two_threads.threads = 2;
  auto packed = DwarfFile::open(FIXTURE_O2_DEBUG, two_threads);
  REQUIRE(plain.ok());
  REQUIRE(packed.ok());
  CHECK(plain->inflated_bytes() == 0);  // read in place
  CHECK(packed->inflated_bytes() > 0);
  auto count_units = [](Dwarf* d) {
    size_t n = 0;
    Dwarf_Off off = 0;
    Dwarf_Off next = 0;
    size_t header = 0;
    while (dwarf_nextcu(d, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
      ++n;
      off = next;
    }
    return n;
  };
  CHECK(count_units(plain->dwarf()) == count_units(packed->dwarf()));
  CHECK(count_units(packed->dwarf()) > 0);
}

TEST_CASE("debuginfo search", "[unit][debuginfo]") {
  test::TempDir root;
  auto binary = ElfFile::open(FIXTURE_O2_STRIPPED);
  REQUIRE(binary.ok());
  const std::string id = *binary->build_id();
  const std::string rel =
      "usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  DebugSearch search;
  search.host_root = root.path().string();

  SECTION("by build-id under the host root") {
    fs::create_directories(fs::path(root / rel).parent_path());
    fs::copy_file(FIXTURE_O2_DEBUG, root / rel);
    auto ref = find_debuginfo(*binary, id, "/nowhere/fixture", search);
    REQUIRE(ref.ok());
    CHECK(ref->source == DebugSource::kBuildIdHost);
    CHECK(ref->path == root / rel);
  }
  SECTION("by build-id under the target's root") {
    test::TempDir host;
    search.host_root = host.path().string();
    search.target_root = root.path().string();
    fs::create_directories(fs::path(root / rel).parent_path());
    fs::copy_file(FIXTURE_O2_DEBUG, root / rel);
    auto ref = find_debuginfo(*binary, id, "/nowhere/fixture", search);
    REQUIRE(ref.ok());
    CHECK(ref->source == DebugSource::kBuildIdRoot);
  }
  SECTION("a file of another build at the build-id path is refused") {
    fs::create_directories(fs::path(root / rel).parent_path());
    fs::copy_file(FIXTURE_O0, root / rel);
    auto ref = find_debuginfo(*binary, id, "/nowhere/fixture", search);
    REQUIRE_FALSE(ref.ok());
    CHECK(ref.error().kind == cephscope::ErrorKind::kNotFound);
    CHECK(ref.error().message.find("build-id") != std::string::npos);
  }
  SECTION("by .gnu_debuglink next to the binary") {
    auto ref = find_debuginfo(*binary, id, FIXTURE_O2_STRIPPED, DebugSearch{});
    REQUIRE(ref.ok());
    CHECK(ref->source == DebugSource::kDebuglink);
    CHECK(fs::equivalent(ref->path, FIXTURE_O2_DEBUG));
  }
  SECTION("an explicit file must match") {
    search.explicit_file = FIXTURE_O0;
    auto ref = find_debuginfo(*binary, id, FIXTURE_O2_STRIPPED, search);
    REQUIRE_FALSE(ref.ok());
    search.explicit_file = FIXTURE_O2_DEBUG;
    CHECK(find_debuginfo(*binary, id, FIXTURE_O2_STRIPPED, search).ok());
  }
  SECTION("nothing found") {
    auto ref = find_debuginfo(*binary, id, "/nowhere/fixture", search);
    REQUIRE_FALSE(ref.ok());
    CHECK(ref.error().message.find("no debuginfo") != std::string::npos);
  }
}
