// Static markers as the resolver reads them: the argument specs' grammar, and every marker of
// a fixture built with <sys/sdt.h> (tests/fixtures/profile/markers.c), of Debian's
// python3.11 and libstdc++.
#include <gelf.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "profile/elf_file.h"
#include "profile/markers.h"
#include "profile/profile_json.h"
#include "resolver/markers_note.h"

using namespace cephscope;
using namespace cephscope::profile;

namespace {

MarkerArg only_arg(const std::string& spec) {
  auto a = parse_marker_args(spec);
  INFO(spec << ": " << (a.ok() ? "" : a.error().message));
  REQUIRE(a.ok());
  REQUIRE(a->size() == 1);
  return a->front();
}

std::string refusal(const std::string& spec) {
  auto a = parse_marker_args(spec);
  REQUIRE_FALSE(a.ok());
  return a.error().message;
}

}  // namespace

TEST_CASE("argument specs decode to register, memory and constant operands", "[unit][markers]") {
  const auto rdi = only_arg("8@%rdi");
  CHECK(rdi.kind == MarkerArg::Kind::kRegister);
  CHECK(dwarf_reg_name(rdi.dwarf_reg) == "rdi");
  CHECK(rdi.size == 8);
  CHECK_FALSE(rdi.is_signed);
  // Sub-registers name their full register; the size says how much of it is the value.
  const auto ebp = only_arg("-4@%ebp");
  CHECK(dwarf_reg_name(ebp.dwarf_reg) == "rbp");
  CHECK(ebp.size == 4);
  CHECK(ebp.is_signed);
  CHECK(dwarf_reg_name(only_arg("1@%r12b").dwarf_reg) == "r12");
  CHECK(dwarf_reg_name(only_arg("2@%si").dwarf_reg) == "rsi");
  const auto mem = only_arg("8@-80(%rbx)");
  CHECK(mem.kind == MarkerArg::Kind::kMemory);
  CHECK(dwarf_reg_name(mem.dwarf_reg) == "rbx");
  CHECK(mem.value == -80);
  const auto stack = only_arg("-4@112(%rsp)");
  CHECK(stack.value == 112);
  CHECK(only_arg("8@(%rax)").value == 0);
  CHECK(only_arg("8@0x10(%rax)").value == 16);
  const auto constant = only_arg("-4@$5");
  CHECK(constant.kind == MarkerArg::Kind::kConstant);
  CHECK(constant.value == 5);
  CHECK(only_arg("-8@$-1").value == -1);
  auto three = parse_marker_args(" 8@%rbp  8@%r12 -4@%eax ");
  REQUIRE(three.ok());
  CHECK(three->size() == 3);
  CHECK(parse_marker_args("")->empty());
}

TEST_CASE("argument specs the collector cannot read are refused with the reason",
          "[unit][markers]") {
  CHECK(refusal("8@(%rax,%rdx,8)").ends_with("indexed operands are not supported"));
  CHECK(refusal("8@foo(%rip)").ends_with("%rip-relative operands are not supported"));
  CHECK(refusal("3@%rax").ends_with("size is not 1, 2, 4 or 8"));
  CHECK(refusal("8@%xmm0").ends_with("unknown register"));
  CHECK(refusal("%rax").ends_with("no size@operand"));
  CHECK(refusal("8@$x").ends_with("constant is not a number"));
  CHECK(refusal("8@99999999999(%rax)").ends_with("displacement is not a 32-bit number"));
  CHECK(refusal("8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax 8@%rax "
                "8@%rax 8@%rax") == "more than 12 arguments");
}

TEST_CASE(
    "every marker of a program built with sys/sdt.h is listed with its file offset, "
    "semaphore and arguments",
    "[unit][markers]") {
  auto elf = ElfFile::open(MARKERS_FIXTURE);
  REQUIRE(elf.ok());
  auto markers = read_markers(*elf);
  REQUIRE(markers.ok());
  std::multimap<std::string, Marker> by_name;
  for (const auto& m : *markers) {
    CHECK(m.provider == "cephscope_fixture");
    CHECK(m.args_error.empty());
    // The site is where the marker's nop is: the file's byte there is 0x90.
    auto byte = elf->read_at(m.file_offset, 1);
    REQUIRE(byte.ok());
    CHECK(byte->at(0) == 0x90);
    by_name.emplace(m.name, m);
  }
  CHECK(markers->size() == 6);
  CHECK(by_name.count("twice") == 2);
  CHECK(by_name.find("plain")->second.args.empty());
  const auto& args = by_name.find("args")->second.args;
  REQUIRE(args.size() == 2);
  CHECK((args[0].size == 8 && args[0].is_signed));
  CHECK((args[1].size == 4 && args[1].is_signed));
  const auto& constant = by_name.find("constant")->second.args;
  REQUIRE(constant.size() == 1);
  CHECK(constant[0].kind == MarkerArg::Kind::kConstant);
  CHECK(constant[0].value == 5);
  // The gated marker's semaphore is the fixture's variable in .probes, as a file offset.
  const Marker& gated = by_name.find("gated")->second;
  REQUIRE(gated.args.size() == 1);
  CHECK(gated.args[0].kind == MarkerArg::Kind::kMemory);
  GElf_Shdr probes;
  Elf_Scn* scn = elf->section(".probes");
  REQUIRE(scn != nullptr);
  REQUIRE(gelf_getshdr(scn, &probes) != nullptr);
  CHECK(gated.semaphore_offset == probes.sh_offset);
  for (const auto& [name, m] : by_name) {
    if (name != "gated") {
      CHECK(m.semaphore_offset == 0);
    }
  }
}

TEST_CASE("markers survive the profile's JSON, and a bad one is refused", "[unit][markers]") {
  auto elf = ElfFile::open(MARKERS_FIXTURE);
  REQUIRE(elf.ok());
  Profile p;
  p.build_id = *elf->build_id();
  p.object = "markers_fixture";
  p.source = "symtab";
  p.probe_set = "usdt";
  p.probe_set_digest = "0123456789abcdef";
  p.markers = *read_markers(*elf);
  Marker broken;
  broken.provider = "p";
  broken.name = "indexed";
  broken.arg_spec = "8@(%rax,%rdx,8)";
  broken.args_error = "argument \"8@(%rax,%rdx,8)\": indexed operands are not supported";
  p.markers.push_back(broken);
  auto back = parse_profile(dump_profile(p));
  REQUIRE(back.ok());
  REQUIRE(back->markers.size() == p.markers.size());
  for (std::size_t i = 0; i < p.markers.size(); ++i) {
    const Marker& a = p.markers[i];
    const Marker& b = back->markers[i];
    CHECK(a.name == b.name);
    CHECK(a.file_offset == b.file_offset);
    CHECK(a.semaphore_offset == b.semaphore_offset);
    CHECK(a.args_error == b.args_error);
    REQUIRE(a.args.size() == b.args.size());
    for (std::size_t j = 0; j < a.args.size(); ++j) {
      CHECK(a.args[j].kind == b.args[j].kind);
      CHECK(a.args[j].dwarf_reg == b.args[j].dwarf_reg);
      CHECK(a.args[j].value == b.args[j].value);
      CHECK(a.args[j].size == b.args[j].size);
      CHECK(a.args[j].is_signed == b.args[j].is_signed);
    }
  }
  std::string text = dump_profile(p);
  const auto at = text.find("\"size\": 8");
  REQUIRE(at != std::string::npos);
  text.replace(at, 9, "\"size\": 3");
  auto bad = parse_profile(text);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("argument size 3 is not 1, 2, 4 or 8") != std::string::npos);
}

TEST_CASE("Debian's python3.11 and libstdc++ carry the markers the usdt tests use",
          "[unit][markers]") {
  for (const auto& [path, provider, name, gated] :
       {std::tuple{"/usr/bin/python3.11", "python", "function__entry", true},
        std::tuple{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "libstdcxx", "throw", false}}) {
    if (access(path, R_OK) != 0) {
      FAIL(path << " is missing");
    }
    auto elf = ElfFile::open(path);
    REQUIRE(elf.ok());
    auto markers = read_markers(*elf);
    REQUIRE(markers.ok());
    bool found = false;
    for (const auto& m : *markers) {
      if (m.provider == provider && m.name == name) {
        found = true;
        CHECK((m.semaphore_offset != 0) == gated);
        CHECK(m.args_error.empty());
      }
    }
    CHECK(found);
  }
}
