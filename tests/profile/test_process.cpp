// Identifying a process's binaries, and refusing ones deleted or replaced since it started.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "fixture_util.h"
#include "profile/elf_file.h"
#include "profile/process.h"

using namespace cephscope::profile;
namespace fs = std::filesystem;

namespace {

// The fixture in "wait" mode: runs until destroyed.
class Waiting : public test::ReadyProcess {
 public:
  explicit Waiting(const std::string& path) : ReadyProcess({path, "wait"}) {}
};

}  // namespace

TEST_CASE("maps lines are parsed", "[unit][process]") {
  const auto maps = parse_maps(
      "55d0a0000000-55d0a0100000 r-xp 00001000 fd:01 1234567 /usr/bin/ceph-osd\n"
      "7f0000000000-7f0000001000 r--p 00000000 08:02 42 /usr/lib/librados.so.2.0.0 (deleted)\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
      "garbage line\n");
  REQUIRE(maps.size() == 3);
  CHECK(maps[0].start == 0x55d0a0000000);
  CHECK(maps[0].offset == 0x1000);
  CHECK(maps[0].dev_major == 0xfd);
  CHECK(maps[0].dev_minor == 1);
  CHECK(maps[0].inode == 1234567);
  CHECK(maps[0].executable);
  CHECK(maps[0].path == "/usr/bin/ceph-osd");
  CHECK(maps[1].deleted);
  CHECK(maps[1].path == "/usr/lib/librados.so.2.0.0");
  CHECK(maps[2].path == "[stack]");
  CHECK(module_name_matches("librados.so.2.0.0", "librados.so.2"));
  CHECK(module_name_matches("ceph-osd", "ceph-osd"));
  CHECK_FALSE(module_name_matches("ceph-osd.old", "ceph-osd"));
  CHECK_FALSE(module_name_matches("librados.so.20", "librados.so.2"));
}

TEST_CASE("a running process's modules are identified", "[unit][process]") {
  test::TempDir dir;
  const std::string copy = dir / "fx-copy";
  fs::copy_file(FIXTURE_O2, copy);
  fs::permissions(copy, fs::perms::owner_all);
  const std::string build_id = *ElfFile::open(copy)->build_id();

  SECTION("executable and a library") {
    Waiting w(copy);
    auto exe = identify_module(w.pid(), "");
    REQUIRE(exe.ok());
    CHECK(exe->name == "fx-copy");
    CHECK(exe->build_id == build_id);
    CHECK(exe->main_executable);
    CHECK(exe->host_path == "/proc/" + std::to_string(w.pid()) + "/root" + copy);
    auto libc = identify_module(w.pid(), "libc.so.6");
    REQUIRE(libc.ok());
    CHECK(libc->build_id.size() == 40);
    auto none = identify_module(w.pid(), "libnothing.so.1");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().reason == "not_mapped");
    CHECK(none.error().reason == to_string(Refusal::kNotMapped));
  }
  SECTION("replaced since it started") {
    Waiting w(copy);
    fs::copy_file(FIXTURE_O0, dir / "new");
    fs::rename(dir / "new", copy);  // what a package upgrade does
    auto id = identify_module(w.pid(), "");
    REQUIRE_FALSE(id.ok());
    CHECK(id.error().reason == "replaced");
  }
  SECTION("deleted since it started") {
    Waiting w(copy);
    fs::remove(copy);
    auto id = identify_module(w.pid(), "");
    REQUIRE_FALSE(id.ok());
    CHECK(id.error().reason == "deleted");
  }
  SECTION("gone") {
    pid_t pid = 0;
    {
      Waiting w(copy);
      pid = w.pid();
    }
    auto id = identify_module(pid, "");
    REQUIRE_FALSE(id.ok());
    CHECK(id.error().reason == "no_process");
  }
}
