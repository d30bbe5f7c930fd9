// The resolver against the fixture's own view of itself, at -O0 and -O2, with DWARF in the
// binary and split out (stripped binary + .gnu_debuglink + zlib-compressed debug file).
#include <gelf.h>

#include <fcntl.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "../support/elf_bomb.h"
#include "fixture_util.h"
#include "profile/elf_file.h"
#include "profile/probe_set.h"
#include "profile/profile_json.h"
#include "resolver/debuginfo.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"

using namespace cephscope::profile;
using nlohmann::json;

namespace {

struct Build {
  std::string name;
  std::string binary;  // what runs and what uprobes attach to
  DebugSource expected_source;
  bool optimized;
};

std::vector<Build> builds() {
  return {
      {"O0", FIXTURE_O0, DebugSource::kEmbedded, false},
      {"O2", FIXTURE_O2, DebugSource::kEmbedded, true},
      {"O2 split", FIXTURE_O2_STRIPPED, DebugSource::kDebuglink, true},
  };
}

const FunctionInstance* out_of_line(const FunctionEntry& f, const std::string& linkage) {
  for (const auto& i : f.instances) {
    if (!i.inlined && i.linkage_name == linkage) {
      return &i;
    }
  }
  return nullptr;
}

Profile resolve_build(const Build& b, DebugSource* source = nullptr) {
  auto binary = ElfFile::open(b.binary);
  REQUIRE(binary.ok());
  auto id = binary->build_id();
  REQUIRE(id.ok());
  auto ref = find_debuginfo(*binary, *id, b.binary, DebugSearch{});
  REQUIRE(ref.ok());
  if (source != nullptr) {
    *source = ref->source;
  }
  auto dwarf = DwarfFile::open(ref->path);
  REQUIRE(dwarf.ok());
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(set.ok());
  auto p = resolve_profile(*binary, &*dwarf, *set);
  REQUIRE(p.ok());
  return std::move(p).value();
}

}  // namespace

TEST_CASE("types and members agree with the fixture", "[unit][resolver]") {
  for (const Build& b : builds()) {
    DYNAMIC_SECTION(b.name) {
      const json o = test::oracle(b.binary);
      DebugSource source{};
      const Profile p = resolve_build(b, &source);
      CHECK(source == b.expected_source);
      CHECK(p.source == "dwarf");

      for (const auto& [name, size] : o["types"].items()) {
        INFO("type " << name);
        const TypeEntry* t = p.type(name);
        REQUIRE(t != nullptr);
        CHECK(t->status == ItemStatus::kOk);
        CHECK(t->size == size.get<uint64_t>());
      }
      for (const auto& [key, v] : o["members"].items()) {
        const std::string type = key.substr(0, key.find('|'));
        const std::string path = key.substr(key.find('|') + 1);
        INFO("member " << type << "." << path);
        const MemberEntry* m = p.member(type, path);
        REQUIRE(m != nullptr);
        CHECK(m->status == ItemStatus::kOk);
        CHECK(m->offset == v[0].get<uint64_t>());
        CHECK(m->size == v[1].get<uint64_t>());
        CHECK_FALSE(m->bit_size.has_value());
      }
      for (const auto& [key, v] : o["bitfields"].items()) {
        const std::string path = key.substr(key.find('|') + 1);
        INFO("bit-field " << path);
        const MemberEntry* m = p.member("fx::Derived", path);
        REQUIRE(m != nullptr);
        REQUIRE(m->status == ItemStatus::kOk);
        REQUIRE(m->bit_size.has_value());
        CHECK(m->offset * 8 + *m->bit_offset == v[0].get<uint64_t>());
        CHECK(*m->bit_size == v[1].get<uint64_t>());
      }
      // Missing items are reported one by one, never fatal for the set.
      CHECK(p.type("fx::NoSuchType")->status == ItemStatus::kNotFound);
      CHECK(p.member("fx::NoSuchType", "x")->status == ItemStatus::kNotFound);
      CHECK(p.member("fx::Derived", "no_such_member")->status == ItemStatus::kNotFound);
      CHECK(p.member("fx::Derived", "label.no_such_field")->status == ItemStatus::kNotFound);
      CHECK(p.member("fx::Derived", "label")->type_name == "string");  // the typedef's name
    }
  }
}

TEST_CASE("functions agree with the fixture", "[unit][resolver]") {
  for (const Build& b : builds()) {
    DYNAMIC_SECTION(b.name) {
      const json o = test::oracle(b.binary);
      REQUIRE(o["optimized"].get<bool>() == b.optimized);
      const Profile p = resolve_build(b);

      size_t expected_out_of_line = 0;
      for (const auto& [key, vaddr] : o["functions"].items()) {
        const std::string name = key.substr(0, key.find('|'));
        const std::string linkage = key.substr(key.find('|') + 1);
        INFO("function " << name << " " << linkage);
        const FunctionEntry* f = p.function(name);
        REQUIRE(f != nullptr);
        CHECK(f->status == ItemStatus::kOk);
        const FunctionInstance* i = out_of_line(*f, linkage);
        REQUIRE(i != nullptr);
        CHECK(i->vaddr == vaddr.get<uint64_t>());
        CHECK(i->file_offset == test::file_offset_of(b.binary, i->vaddr));
        CHECK(i->size > 0);
        CHECK_FALSE(i->entry_insn.empty());
        CHECK_FALSE(i->clone);
        ++expected_out_of_line;
      }
      // No out-of-line instance the fixture does not know about.
      size_t out_of_line_count = 0;
      for (const auto& f : p.functions) {
        for (const auto& i : f.instances) {
          out_of_line_count += i.inlined ? 0 : 1;
        }
      }
      CHECK(out_of_line_count == expected_out_of_line);

      const FunctionEntry* twice = p.function("fx::Derived::twice");
      const FunctionEntry* half = p.function("fx::Derived::half");
      auto inlined_count = [](const FunctionEntry* f) {
        return std::count_if(f->instances.begin(), f->instances.end(),
                             [](const FunctionInstance& i) { return i.inlined; });
      };
      if (b.optimized) {
        CHECK(inlined_count(twice) >= 1);
        CHECK(half->status == ItemStatus::kInlinedOnly);
        REQUIRE(inlined_count(half) >= 1);
        for (const auto& i : half->instances) {
          CHECK(i.inlined);
          CHECK(i.caller == "fx::Derived::mix");
          CHECK(i.file_offset == test::file_offset_of(b.binary, i.vaddr));
        }
      } else {
        CHECK(inlined_count(twice) == 0);
        CHECK(half->status == ItemStatus::kOk);
      }
      CHECK(p.function("fx::Derived::no_such_method")->status == ItemStatus::kNotFound);
    }
  }
}

TEST_CASE("direct calls of one function in another", "[unit][resolver]") {
  for (const Build& b : builds()) {
    DYNAMIC_SECTION(b.name) {
      const Profile p = resolve_build(b);
      const CallSiteEntry* twice = p.calls("fx::Derived::mix", "fx::Derived::twice");
      REQUIRE(twice != nullptr);
      INFO(twice->message);
      if (!b.optimized) {  // -O0 inlines nothing: mix calls twice once (GCC may inline at -O2)
        REQUIRE(twice->status == ItemStatus::kOk);
        REQUIRE(twice->sites.size() == 1);
      }
      CHECK((twice->status == ItemStatus::kOk) == !twice->sites.empty());
      const FunctionInstance* mix =
          out_of_line(*p.function("fx::Derived::mix"), "_ZN2fx7Derived3mixEl");
      const FunctionInstance* callee =
          out_of_line(*p.function("fx::Derived::twice"), "_ZNK2fx7Derived5twiceEv");
      REQUIRE(mix != nullptr);
      REQUIRE(callee != nullptr);
      auto binary = ElfFile::open(b.binary);
      REQUIRE(binary.ok());
      for (const CallSite& c : twice->sites) {
        // inside mix, at the file offset of its vaddr, a `call rel32` that lands on twice
        CHECK(c.vaddr >= mix->vaddr);
        CHECK(c.vaddr < mix->vaddr + mix->size);
        CHECK(c.file_offset == test::file_offset_of(b.binary, c.vaddr));
        auto code = binary->read_at(c.file_offset, 5);
        REQUIRE(code.ok());
        REQUIRE(code->size() == 5);
        CHECK((*code)[0] == 0xe8);
        std::int32_t rel = 0;
        std::memcpy(&rel, code->data() + 1, sizeof rel);
        CHECK(c.vaddr + 5 + rel == callee->vaddr);
      }
      const CallSiteEntry* none = p.calls("fx::Derived::mix", "fx::sum8");
      REQUIRE(none != nullptr);
      CHECK(none->status == ItemStatus::kNotFound);
      CHECK(none->sites.empty());
      CHECK(none->message == "no direct call of fx::sum8 in fx::Derived::mix");
    }
  }
}

TEST_CASE("without DWARF, functions come from the symbol table", "[unit][resolver]") {
  const json o = test::oracle(FIXTURE_O2_STRIPPED);
  auto binary = ElfFile::open(FIXTURE_O2_STRIPPED);
  REQUIRE(binary.ok());
  CHECK_FALSE(binary->has_data_section(".debug_info"));
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(set.ok());
  auto p = resolve_profile(*binary, nullptr, *set);
  REQUIRE(p.ok());
  CHECK(p->source == "symtab");
  for (const auto& [key, vaddr] : o["functions"].items()) {
    const std::string name = key.substr(0, key.find('|'));
    const std::string linkage = key.substr(key.find('|') + 1);
    INFO(name << " " << linkage);
    const FunctionEntry* f = p->function(name);
    REQUIRE(f != nullptr);
    const FunctionInstance* i = out_of_line(*f, linkage);
    REQUIRE(i != nullptr);
    CHECK(i->vaddr == vaddr.get<uint64_t>());
    CHECK(i->file_offset == test::file_offset_of(FIXTURE_O2_STRIPPED, i->vaddr));
  }
  CHECK(p->function("fx::Derived::half")->status == ItemStatus::kNotFound);
  CHECK(p->type("fx::Derived")->status == ItemStatus::kNoDebuginfo);
  CHECK(p->member("fx::Derived", "counter")->status == ItemStatus::kNoDebuginfo);
}

TEST_CASE("a debug file of another build is refused", "[unit][resolver]") {
  auto binary = ElfFile::open(FIXTURE_O0);
  auto other = DwarfFile::open(FIXTURE_O2_DEBUG);
  REQUIRE(binary.ok());
  REQUIRE(other.ok());
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  auto p = resolve_profile(*binary, &*other, *set);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message.find("build-id") != std::string::npos);
}

TEST_CASE("a decompression bomb is refused before anything is inflated", "[unit][resolver]") {
  cephscope::profile::test::TempDir dir;
  // 2 GiB + 16 MiB of zeros from about 2 MB: just over the default cap.
  const std::string bomb = dir / "bomb.debug";
  cephscope::test::write_elf_bomb(bomb, kDefaultMaxInflatedBytes + (std::uint64_t{16} << 20));
  const auto t0 = std::chrono::steady_clock::now();
  auto d = DwarfFile::open(bomb);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("bomb of %llu bytes on disk refused in %.1f ms\n",
              static_cast<unsigned long long>(std::filesystem::file_size(bomb)), ms);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().reason == "too_large");
  CHECK(d.error().message.find("debug sections inflate to 2164260864 bytes, over the cap of "
                               "2147483648") != std::string::npos);
  CHECK(ms < 1000);

  // A small one is a real stream: with the cap above it, it inflates (and is no DWARF).
  const std::string small = dir / "small.debug";
  cephscope::test::write_elf_bomb(small, std::uint64_t{64} << 20);
  DwarfOpenOptions tight;
  tight.max_inflated_bytes = std::uint64_t{32} << 20;
  auto refused = DwarfFile::open(small, tight);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().reason == "too_large");
  DwarfOpenOptions loose;
  loose.max_inflated_bytes = std::uint64_t{64} << 20;
  auto inflated = DwarfFile::open(small, loose);
  if (!inflated.ok()) {
    CHECK(inflated.error().message.find("corrupt compressed") == std::string::npos);
    CHECK(inflated.error().reason != "too_large");
  }
}

TEST_CASE("the resolver names a refused debug file on every member", "[unit][resolver]") {
  cephscope::profile::test::TempDir dir;
  auto binary = ElfFile::open(FIXTURE_O2_STRIPPED);
  REQUIRE(binary.ok());
  auto id = binary->build_id();
  REQUIRE(id.ok());
  // The bomb carries the binary's build-id, as a debug file in a target's root would.
  const std::string debug_dir = dir / "debug";
  const std::string file =
      debug_dir + "/.build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug";
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  cephscope::test::write_elf_bomb(file, std::uint64_t{64} << 20, *id);
  int status = 0;
  const std::string out = cephscope::profile::test::run(
      std::string(RESOLVER_BIN) + " --binary " + FIXTURE_O2_STRIPPED + " --host-root / " +
          "--debug-dir " + debug_dir + " --no-debuginfod --max-debug-bytes 33554432 < " +
          FIXTURE_PROBE_SET + " 2>" + (dir / "log"),
      &status);
  REQUIRE(status == 0);
  auto p = parse_profile(out);
  REQUIRE(p.ok());
  CHECK(p->source == "symtab");
  REQUIRE_FALSE(p->members.empty());
  for (const auto& m : p->members) {
    CHECK(m.message.find("no DWARF: ") == 0);
    CHECK(m.message.find("over the cap of 33554432") != std::string::npos);
  }
}

TEST_CASE("a debug file whose .gnu_debugaltlink names itself opens", "[unit][resolver]") {
  // tests/fixtures/fuzz/make-seeds.sh made it. The link is followed once, never from the file
  // it leads to, so neither a loop to itself nor a cycle recurses.
  auto dwarf = DwarfFile::open(FIXTURE_DIR "/self-altlink.debug");
  REQUIRE(dwarf.ok());
  CHECK(dwarf->dwarf() != nullptr);
}
