// The resolver as a constrained child: the real cephscope-resolver on the fixture, and stand-in
// resolvers (shell scripts) that report their limits, hang, crash or outlive their parent.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fixture_util.h"
#include "profile/resolver_process.h"

using namespace cephscope::profile;
namespace fs = std::filesystem;

namespace {

ProbeSet fixture_set() {
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(set.ok());
  return std::move(set).value();
}

// An executable shell script in DIR that stands in for the resolver.
std::string stand_in(const test::TempDir& dir, const std::string& name, const std::string& body) {
  std::string path = dir / name;
  test::write_file(path, "#!/bin/sh\n" + body + "\n");
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

ResolveRequest fixture_request() {
  ResolveRequest req;
  req.binary = FIXTURE_O2;
  req.set = fixture_set();
  return req;
}

cephscope::Result<ResolveOutcome> run_with(
    const std::string& executable, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  ResolverLimits limits;
  limits.executable = executable;
  limits.timeout = timeout;
  return run_resolver(fixture_request(), limits);
}

bool alive(pid_t pid) {
  return kill(pid, 0) == 0;
}

}  // namespace

TEST_CASE("the resolver child makes the profile the loader accepts", "[unit][resolver]") {
  ResolverLimits limits;
  limits.executable = RESOLVER_BIN;
  auto r = run_resolver(fixture_request(), limits);
  INFO((r.ok() ? r->log : r.error().message));
  REQUIRE(r.ok());
  CHECK(r->profile.source == "dwarf");
  CHECK(r->profile.probe_set_digest == fixture_set().digest);
  CHECK(r->debug_source == "embedded");
  CHECK(r->profile.function("fx::sum8")->status == ItemStatus::kOk);
  CHECK(r->peak_rss_kib > 0);
}

TEST_CASE("the resolver child has no capabilities, a memory limit and only its descriptors",
          "[unit][resolver]") {
  test::TempDir dir;
  // It reports what it was given on stderr, then fails: the error carries its last line.
  const std::string caps = stand_in(dir, "caps", "grep CapEff /proc/self/status >&2; exit 1");
  auto r = run_with(caps);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "resolver failed (exit 1): CapEff:\t0000000000000000");

  if (geteuid() == 0) {  // emptying the bounding set needs CAP_SETPCAP
    const std::string bounding =
        stand_in(dir, "bounding", "grep CapBnd /proc/self/status >&2; exit 1");
    r = run_with(bounding);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "resolver failed (exit 1): CapBnd:\t0000000000000000");
  }

  const std::string nnp = stand_in(dir, "nnp", "grep NoNewPrivs /proc/self/status >&2; exit 1");
  r = run_with(nnp);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "resolver failed (exit 1): NoNewPrivs:\t1");

  ResolverLimits limits;
  limits.executable =
      stand_in(dir, "limits", "grep 'Max address space' /proc/self/limits | tr -s ' ' >&2; exit 1");
  limits.address_space_bytes = 256ULL << 20;
  r = run_resolver(fixture_request(), limits);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "resolver failed (exit 1): Max address space 268435456 268435456 bytes");

  // fds 0-2 only (no target root here); `ls` lists the one it opens itself as well.
  const std::string fds = stand_in(dir, "fds", "ls /proc/self/fd | tr '\\n' ' ' >&2; exit 1");
  r = run_with(fds);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "resolver failed (exit 1): 0 1 2 3");
}

TEST_CASE("a resolver that hangs, crashes or lies is refused with the reason", "[unit][resolver]") {
  test::TempDir dir;
  auto hang = run_with(stand_in(dir, "hang", "exec sleep 60"), std::chrono::seconds(1));
  REQUIRE_FALSE(hang.ok());
  CHECK(hang.error().message == "resolver timed out after 1 s");

  auto crash = run_with(stand_in(dir, "crash", "echo about to crash >&2; kill -SEGV $$"));
  REQUIRE_FALSE(crash.ok());
  CHECK(crash.error().message == "resolver killed by signal 11 (about to crash)");

  auto garbage = run_with(stand_in(dir, "garbage", "cat >/dev/null; echo '{\"schema\": 1}'"));
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().message.starts_with("resolver output: corrupt profile"));

  auto missing = run_with(dir / "no-such-resolver");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("exec: No such file or directory") != std::string::npos);

  std::stop_source stop;
  ResolverLimits limits;
  limits.executable = stand_in(dir, "slow", "exec sleep 60");
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  auto stopped = run_resolver(fixture_request(), limits, stop.get_token());
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().message == "resolver stopped: the daemon is shutting down");
}

TEST_CASE("a resolver never outlives the process that started it, even after kill -9",
          "[unit][resolver]") {
  test::TempDir dir;
  const std::string pid_file = dir / "pid";
  const std::string sleeper = stand_in(dir, "sleeper", "echo $$ > " + pid_file + "; exec sleep 60");
  const pid_t parent = fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    ResolverLimits limits;
    limits.executable = sleeper;
    (void)run_resolver(fixture_request(), limits);
    _exit(0);
  }
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(pid_file);
    in >> child;
  }
  REQUIRE(child > 0);
  REQUIRE(alive(child));
  REQUIRE(kill(parent, SIGKILL) == 0);
  REQUIRE(waitpid(parent, nullptr, 0) == parent);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // The orphan is reaped by init (or a subreaper); a zombie still answers kill(0).
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    gone = !(stat >> pid >> comm >> state) || state == "Z";
  }
  CHECK(gone);
}
