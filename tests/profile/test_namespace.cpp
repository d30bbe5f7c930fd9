// A process in another mount namespace: the fixture runs from a tmpfs mounted only inside
// its own namespace (`unshare --mount --propagation private`), over a directory that is empty
// in the host's view. Its binary is then reachable from the host only through
// /proc/PID/root and /proc/PID/map_files: identify_module() and `cephscope profile show
// --pid` must find it there. Root only (unshare, mount, map_files); exits 77 otherwise.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "catch_session.h"
#include "fixture_util.h"
#include "profile/elf_file.h"
#include "profile/process.h"

using namespace cephscope::profile;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kBinary = "profile_fixture_O2.stripped";  // an object of the probe set
constexpr const char* kDebug = "profile_fixture_O2.debug";      // its .gnu_debuglink name

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// The stripped fixture and its debug file copied into a tmpfs over MOUNTPOINT, in a new mount
// namespace, running "wait" until destroyed.
class InNamespace : public test::ReadyProcess {
 public:
  // unshare and sh both exec in place: the fixture keeps this pid; the namespace, and its
  // tmpfs, go with it
  explicit InNamespace(const std::string& mountpoint)
      : ReadyProcess({"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                      "set -e; mount -t tmpfs cephscope-test " + quote(mountpoint) + "; cp " +
                          quote(FIXTURE_O2_STRIPPED) + " " + quote(FIXTURE_O2_DEBUG) + " " +
                          quote(mountpoint) + "/; exec " + quote(mountpoint + "/" + kBinary) +
                          " wait"}) {}
};

}  // namespace

TEST_CASE("a binary only reachable in another mount namespace is identified",
          "[root][process][namespace]") {
  test::TempDir tmp;
  const std::string mountpoint = tmp / "ns-only";
  fs::create_directories(mountpoint);
  const std::string path = mountpoint + "/" + kBinary;
  const std::string build_id = *ElfFile::open(FIXTURE_O2_STRIPPED)->build_id();

  InNamespace proc(mountpoint);
  const std::string pid = std::to_string(proc.pid());
  const std::string root = "/proc/" + pid + "/root";

  // The host does not see it: the tmpfs exists only in the process's namespace.
  REQUIRE_FALSE(fs::exists(path));
  REQUIRE(fs::is_empty(mountpoint));
  REQUIRE(fs::read_symlink("/proc/" + pid + "/ns/mnt") != fs::read_symlink("/proc/self/ns/mnt"));
  REQUIRE(fs::exists(root + path));

  SECTION("identify_module") {
    auto id = identify_module(proc.pid(), "");
    INFO((id.ok() ? "" : id.error().message));
    REQUIRE(id.ok());
    CHECK(id->name == kBinary);
    CHECK(id->path == path);
    CHECK(id->root == root);
    CHECK(id->host_path == root + path);
    CHECK(id->build_id == build_id);
    CHECK(id->main_executable);
    // The mapping's inode is the tmpfs file's, seen through the process's root.
    struct stat st {};
    REQUIRE(::stat(id->host_path.c_str(), &st) == 0);
    CHECK(id->inode == st.st_ino);
    // By name, as a probe set's object.
    auto by_name = identify_module(proc.pid(), kBinary);
    REQUIRE(by_name.ok());
    CHECK(by_name->build_id == build_id);
  }

  SECTION("cephscope profile show --pid") {
    const std::string common = std::string(CEPHSCOPE_BIN) + " profile show --pid " + pid +
                               " --module " + kBinary + " --probe-set " + FIXTURE_PROBE_SET +
                               " --cache-dir " + quote(tmp / "cache") + " --shipped-dir " +
                               quote(tmp / "no-shipped") + " --no-cache-write";
    int status = -1;
    const std::string text = test::run(common + " 2>&1", &status);
    INFO(text);
    REQUIRE(status == 0);
    CHECK(text.find("process     " + pid + ": " + path + " (" + root + path + ", inode ") !=
          std::string::npos);
    // Resolved from the debug file next to it, inside the namespace (.gnu_debuglink under
    // the process's root).
    CHECK(text.find("origin      resolved: " + root + mountpoint + "/" + kDebug +
                    " (debuginfo: gnu_debuglink)") != std::string::npos);
    CHECK(text.find("build-id    " + build_id) != std::string::npos);
    CHECK(text.find("source      dwarf") != std::string::npos);

    const std::string js = test::run(common + " --json 2>/dev/null", &status);
    REQUIRE(status == 0);
    REQUIRE(js.find('{') != std::string::npos);
    const json p = json::parse(js.substr(js.find('{')));
    CHECK(p["build_id"] == build_id);
    CHECK(p["source"] == "dwarf");
    // Function addresses as the fixture itself reports them.
    const json o = test::oracle(FIXTURE_O2_STRIPPED);
    for (const auto& [key, vaddr] : o["functions"].items()) {
      const std::string name = key.substr(0, key.find('|'));
      const std::string linkage = key.substr(key.find('|') + 1);
      INFO("function " << name << " " << linkage);
      bool found = false;
      for (const auto& f : p["functions"]) {
        if (f["name"] != name) {
          continue;
        }
        for (const auto& i : f["instances"]) {
          found = found || (i.value("linkage_name", "") == linkage && !i["inlined"].get<bool>() &&
                            i["vaddr"] == vaddr);
        }
      }
      CHECK(found);
    }
  }
}

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    std::printf("skipped: needs root (unshare --mount, mount, /proc/PID/map_files)\n");
    return 77;
  }
  // Mount namespaces may be denied here (a container without CAP_SYS_ADMIN, seccomp).
  int status = -1;
  cephscope::profile::test::run(
      "unshare --mount --propagation private -- sh -c 'mount -t tmpfs none /mnt' >/dev/null "
      "2>&1",
      &status);
  if (status != 0) {
    std::printf("skipped: cannot create a mount namespace with a tmpfs (unshare --mount)\n");
    return 77;
  }
  return run_catch_session(argc, argv);
}
