// Static markers (USDT) through the real daemon, with the markers every Debian host carries:
// libstdc++'s libstdcxx:throw and catch, and /usr/bin/python3.11's python:function__entry and
// function__return, whose semaphore the kernel raises only while a probe is attached.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "profile/process.h"
#include "profile/profile_json.h"
#include "support/daemon_runner.h"

using namespace cephscope;
using namespace cephscope::test;

namespace {

constexpr const char* kPython = "/usr/bin/python3.11";

bool file_has(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str().find(text) != std::string::npos;
}

// The file offset of a marker's semaphore, as the resolver lists the binary's markers.
std::uint64_t semaphore_offset(const std::string& dir, const std::string& binary,
                               const std::string& provider, const std::string& name) {
  const std::string set = dir + "/markers.json";
  std::ofstream(set) << R"({"schema": "cephscope-probe-set", "schema_version": 1, )"
                     << R"("name": "usdt", "objects": ["python3.11"], "markers": true})";
  const std::string out = dir + "/markers.profile.json";
  REQUIRE(run_command("(" + std::string(CEPHSCOPE_BUILD_DIR) +
                      "/daemon/cephscope-resolver --binary " + binary + " < " + set + " > " + out +
                      ")") == 0);
  auto p = profile::load_profile(out);
  INFO((p.ok() ? "" : p.error().message));
  REQUIRE(p.ok());
  for (const auto& m : p->markers) {
    if (m.provider == provider && m.name == name) {
      return m.semaphore_offset;
    }
  }
  FAIL("no marker " << provider << ":" << name << " in " << binary);
  return 0;
}

// The 2-byte semaphore at file offset OFFSET of BINARY in process PID, read from its memory.
std::optional<std::uint16_t> semaphore(pid_t pid, const std::string& binary, std::uint64_t offset) {
  auto maps = profile::read_maps(pid);
  if (!maps.ok()) {
    return std::nullopt;
  }
  for (const auto& m : *maps) {
    if (m.path == binary && offset >= m.offset && offset - m.offset < m.end - m.start) {
      std::ifstream mem("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
      mem.seekg(static_cast<std::streamoff>(m.start + offset - m.offset));
      std::uint16_t v = 0;
      if (mem.read(reinterpret_cast<char*>(&v), sizeof v)) {
        return v;
      }
    }
  }
  return std::nullopt;
}

// The collector's programs find their marker site by the link's cookie (Linux 5.15).
bool have_attach_cookie() {
  return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, nullptr) == 1;
}

}  // namespace

TEST_CASE(
    "libstdc++'s throw marker counts a program's exceptions exactly, and throw->catch "
    "pairs by the exception's address",
    "[usdt]") {
  const std::string dir = test_dir("/tmp/cephscope-usdt-cxx");
  Daemon daemon(dir,
                "discovery:\n  scan_interval: 1s\n  matchers:\n"
                "    - {name: thrower, comm: '^usdt_thrower$'}\n"
                "collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: "
                "false}, osd: {enabled: false}, rados: {enabled: false}, kclient: {enabled: "
                "false}}\n"
                "profiles: {cache_dir: " +
                    dir +
                    "/cache, shipped_dirs: []}\n"
                    "usdt:\n"
                    "  - {targets: [thrower], binary: libstdc++.so.6, provider: libstdcxx, probe: "
                    "throw}\n"
                    "  - {targets: [thrower], binary: libstdc++.so.6, provider: libstdcxx, span: "
                    "throw_to_catch, start: throw, end: catch, key: 1}\n"
                    "  - {targets: [thrower], binary: libstdc++.so.6, provider: libstdcxx, probe: "
                    "no_such_marker}\n"
                    "  - {targets: [thrower], binary: librados.so.2, provider: librados, probe: "
                    "any}\n");
  DaemonLogOnFailure show_log(daemon);
  REQUIRE(daemon.wait_ready());
  if (!have_attach_cookie()) {
    // A kernel without cookies for uprobes (5.10): every rule says so, nothing is attached.
    const auto m = daemon.scrape();
    CHECK(m.find("cephscope_probe_attached", {{"collector", "usdt"},
                                              {"probe", "libstdcxx:throw"},
                                              {"reason", "kernel_feature_missing"}})
              .size() == 1);
    CHECK(m.sum("cephscope_probe_attached", {{"collector", "usdt"}}) == 0);
    return;
  }
  constexpr int kThrows = 1234;
  const std::string go = dir + "/go";
  std::filesystem::remove(go);
  Subprocess thrower({CEPHSCOPE_USDT_THROWER, std::to_string(kThrows), go}, dir + "/thrower.out");
  const std::map<std::string, std::string> who = {{"process", "thrower"}};
  REQUIRE(eventually(
      [&] {
        auto m = daemon.scrape();
        return m.sum("cephscope_probe_attached",
                     {{"collector", "usdt"}, {"target", "thrower"}, {"reason", "ok"}}) == 2;
      },
      std::chrono::seconds(60)));
  // Attached and not hit: the counted marker is a series at 0 already.
  auto before = daemon.scrape();
  // A marker the library lacks, and a library the program never loaded: each says why.
  CHECK(before.sum("cephscope_probe_attached", {{"collector", "usdt"},
                                                {"probe", "libstdcxx:no_such_marker"},
                                                {"reason", "symbol_not_found"}}) == 0);
  CHECK(before
            .find("cephscope_probe_attached", {{"collector", "usdt"},
                                               {"probe", "libstdcxx:no_such_marker"},
                                               {"reason", "symbol_not_found"}})
            .size() == 1);
  CHECK(before
            .find("cephscope_probe_attached",
                  {{"collector", "usdt"}, {"probe", "librados:any"}, {"reason", "binary_refused"}})
            .size() == 1);
  CHECK(daemon.log_has("no marker libstdcxx:no_such_marker in /usr/lib/", std::chrono::seconds(1)));
  REQUIRE(before.find("cephscope_usdt_events_total", who).size() == 1);
  CHECK(before.sum("cephscope_usdt_events_total", who) == 0);
  std::ofstream(go) << "go\n";
  REQUIRE(
      eventually([&] { return file_has(dir + "/thrower.out", "done"); }, std::chrono::seconds(60)));
  auto after = daemon.scrape();
  CHECK(after.sum("cephscope_usdt_events_total",
                  {{"process", "thrower"}, {"provider", "libstdcxx"}, {"probe", "throw"}}) ==
        kThrows);
  CHECK(after.sum("cephscope_usdt_span_seconds_count",
                  {{"process", "thrower"}, {"span", "throw_to_catch"}}) == kThrows);
  CHECK(after.sum("cephscope_usdt_span_seconds_sum",
                  {{"process", "thrower"}, {"span", "throw_to_catch"}}) > 0);
}

TEST_CASE(
    "python3.11's function__entry moves by exactly the calls a program makes, its "
    "semaphore raised only while attached",
    "[usdt]") {
  REQUIRE(access(kPython, X_OK) == 0);  // Debian 12's python3; the guests get it with Ceph
  if (!have_attach_cookie()) {
    return;  // the first test proves the collector says why
  }
  const std::string dir = test_dir("/tmp/cephscope-usdt-python");
  const std::uint64_t sem = semaphore_offset(dir, kPython, "python", "function__entry");
  REQUIRE(sem != 0);
  // Two copies of one program, by a name the matcher takes: the baseline makes 0 calls.
  const std::string exe = dir + "/usdt-py";
  std::filesystem::remove(exe);
  std::filesystem::create_symlink(kPython, exe);
  constexpr int kCalls = 777;
  const std::string go0 = dir + "/go0";
  const std::string go1 = dir + "/go1";
  std::filesystem::remove(go0);
  std::filesystem::remove(go1);
  Subprocess base({exe, CEPHSCOPE_USDT_CALLS, "0", go0}, dir + "/base.out");
  Subprocess calls({exe, CEPHSCOPE_USDT_CALLS, std::to_string(kCalls), go1}, dir + "/calls.out");
  // Before any probe: the program does not compute the marker's arguments.
  REQUIRE(eventually([&] { return semaphore(calls.pid(), kPython, sem).has_value(); },
                     std::chrono::seconds(10)));
  CHECK(semaphore(base.pid(), kPython, sem) == 0);
  CHECK(semaphore(calls.pid(), kPython, sem) == 0);
  {
    Daemon daemon(
        dir,
        "discovery:\n  scan_interval: 1s\n  matchers:\n"
        "    - {name: pyapp, comm: '^usdt-py$'}\n"
        "collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: "
        "{enabled: false}, osd: {enabled: false}, rados: {enabled: false}, kclient: "
        "{enabled: false}}\n"
        "profiles: {cache_dir: " +
            dir +
            "/cache, shipped_dirs: []}\n"
            "usdt:\n"
            "  - {targets: [pyapp], binary: /usr/bin/python3.11, provider: python, probe: "
            "function__entry}\n"
            "  - {targets: [pyapp], binary: /usr/bin/python3.11, provider: python, span: "
            "call, start: function__entry, end: function__return}\n");
    DaemonLogOnFailure show_log(daemon);
    REQUIRE(daemon.wait_ready());
    const std::map<std::string, std::string> entry = {
        {"process", "pyapp"}, {"provider", "python"}, {"probe", "function__entry"}};
    const std::map<std::string, std::string> span = {{"process", "pyapp"}, {"span", "call"}};
    REQUIRE(eventually(
        [&] {
          return semaphore(base.pid(), kPython, sem) == 1 &&
                 semaphore(calls.pid(), kPython, sem) == 1 &&
                 daemon.scrape().find("cephscope_usdt_events_total", entry).size() == 1;
        },
        std::chrono::seconds(60)));
    // Both processes are one target (pyapp): each one's calls are the counter's difference.
    auto run = [&](const std::string& go, const std::string& out) {
      const auto m0 = daemon.scrape();
      std::ofstream(go) << "go\n";
      REQUIRE(eventually([&] { return file_has(out, "done"); }, std::chrono::seconds(60)));
      const auto m1 = daemon.scrape();
      return std::pair{m1.sum("cephscope_usdt_events_total", entry) -
                           m0.sum("cephscope_usdt_events_total", entry),
                       m1.sum("cephscope_usdt_span_seconds_count", span) -
                           m0.sum("cephscope_usdt_span_seconds_count", span)};
    };
    const auto [base_entries, base_spans] = run(go0, dir + "/base.out");
    const auto [entries, spans] = run(go1, dir + "/calls.out");
    INFO("baseline: " << base_entries << " entries, " << base_spans << " spans");
    CHECK(entries - base_entries == kCalls);
    CHECK(spans - base_spans == kCalls);
    REQUIRE(daemon.stop() == 0);
  }
  // The daemon gone, its probes are gone: the kernel lowered the semaphore again.
  CHECK(semaphore(base.pid(), kPython, sem) == 0);
  CHECK(semaphore(calls.pid(), kPython, sem) == 0);
}

TEST_CASE("--config.check says for each usdt rule whether its markers are in its binary",
          "[usdt][userspace]") {
  const std::string dir = test_dir("/tmp/cephscope-usdt-check");
  const std::string config = dir + "/check.yaml";
  std::ofstream(config)
      << "discovery:\n  matchers:\n    - {name: app, comm: '^app$'}\n"
         // the rados collector resolves the host's client libraries at its start: not here
         "collectors: {rados: {enabled: false}}\n"
         "profiles: {cache_dir: "
      << dir
      << "/cache, shipped_dirs: []}\n"
         "usdt:\n"
         "  - {targets: [app], binary: libstdc++.so.6, provider: libstdcxx, probe: throw}\n"
         "  - {targets: [app], binary: /usr/bin/python3.11, provider: python, span: call, start: "
         "function__entry, end: function__return}\n"
         "  - {targets: [app], binary: libstdc++.so.6, provider: libstdcxx, probe: nothere}\n"
         "  - {targets: [app], binary: libstdc++.so.6, provider: libstdcxx, span: bad, start: "
         "throw, end: catch, key: 3}\n"
         "  - {targets: [app], binary: libnothere.so.1, provider: p, probe: q}\n";
  std::string out;
  REQUIRE(run_command(daemon_binary() + " --config.check --config.file " + config, &out) == 0);
  INFO(out);
  CHECK(out.find("usdt rule=libstdcxx:throw binary=libstdc++.so.6 host_file=") !=
        std::string::npos);
  CHECK(out.find("status=ok sites=throw:1\n") != std::string::npos);
  CHECK(out.find("usdt rule=python:call binary=/usr/bin/python3.11 status=ok "
                 "sites=function__entry:1+semaphore,function__return:1+semaphore\n") !=
        std::string::npos);
  CHECK(out.find("usdt rule=libstdcxx:nothere") != std::string::npos);
  CHECK(out.find("status=unavailable reason=symbol_not_found detail=\"no marker "
                 "libstdcxx:nothere in ") != std::string::npos);
  CHECK(out.find("status=unavailable reason=members_missing detail=\"libstdcxx:catch argument 3 "
                 "cannot be read (the marker has 2 arguments)\"") != std::string::npos);
  CHECK(out.find("usdt rule=p:q binary=libnothere.so.1 status=not_on_host") != std::string::npos);
  // The usdt rules' check leaves no files behind: nothing was cached.
  CHECK_FALSE(std::filesystem::exists(dir + "/cache"));
}
