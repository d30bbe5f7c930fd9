// The profile CLI end to end on the fixture: generate, show FILE, show --pid.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "fixture_util.h"
#include "profile/profile_json.h"

using namespace cephscope::profile;

namespace {

std::string cli(const std::string& args, int* status) {
  return test::run(std::string(PROFILE_CLI) + " " + args + " 2>&1", status);
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("profile generate and show", "[unit][cli]") {
  test::TempDir dir;
  int status = -1;
  const std::string out = dir / "fx.json";
  std::string text = cli(std::string("profile generate --binary ") + FIXTURE_O2_STRIPPED +
                             " --probe-set " + FIXTURE_PROBE_SET + " --out " + out,
                         &status);
  INFO(text);
  REQUIRE(status == 0);
  CHECK(contains(text, "gnu_debuglink"));
  auto p = load_profile(out);
  REQUIRE(p.ok());
  CHECK(p->source == "dwarf");

  text = cli("profile show " + out, &status);
  CHECK(status == 0);
  CHECK(contains(text, "fx::Derived::scale"));
  CHECK(contains(text, "inlined_only"));

  test::write_file(dir / "bad.json", R"({"schema": "cephscope-profile", "schema_version": 9})");
  text = cli("profile show " + (dir / "bad.json"), &status);
  CHECK(status == 1);
  CHECK(contains(text, "unsupported profile schema_version 9"));

  text = cli(std::string("profile generate --binary ") + FIXTURE_O2_STRIPPED + " --debug-file " +
                 FIXTURE_O0 + " --probe-set " + FIXTURE_PROBE_SET + " --out " + (dir / "x.json"),
             &status);
  CHECK(status == 1);
  CHECK(contains(text, "build-id"));
}

TEST_CASE("profile show --pid says where the profile came from", "[unit][cli]") {
  test::TempDir dir;
  int in[2];
  REQUIRE(::pipe(in) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::close(in[1]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::execl(FIXTURE_O0, FIXTURE_O0, "wait", nullptr);
    ::_exit(127);
  }
  ::close(in[0]);
  ::usleep(200 * 1000);  // let it exec and map its binary
  const std::string base = "profile show --pid " + std::to_string(pid) + " --module " +
                           std::filesystem::path(FIXTURE_O0).filename().string() + " --probe-set " +
                           FIXTURE_PROBE_SET + " --shipped-dir " + (dir / "none");
  const std::string args = base + " --cache-dir " + (dir / "cache");
  int status = -1;
  std::string first = cli(args, &status);
  INFO(first);
  CHECK(status == 0);
  CHECK(contains(first, "origin      resolved"));
  std::string second = cli(args, &status);
  INFO(second);
  CHECK(status == 0);
  CHECK(contains(second, "origin      cache"));
  std::string stored_only = cli(base + " --no-resolve --cache-dir " + (dir / "empty"), &status);
  CHECK(status == 0);
  CHECK(contains(stored_only, "no profile"));
  ::close(in[1]);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}
