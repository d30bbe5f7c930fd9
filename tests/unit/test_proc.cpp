#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "discovery/classify.h"
#include "discovery/discovery.h"
#include "discovery/proc.h"
#include "support/temp_dir.h"

using namespace cephscope;

namespace {

const std::string kProc = std::string(CEPHSCOPE_FIXTURES) + "/proc";
const std::string kFsid = "8a3e4f6c-1b2d-4c5e-9f70-1a2b3c4d5e6f";

ProcessInfo must_read(const ProcReader& proc, pid_t pid) {
  auto r = proc.read(pid);
  INFO("pid " << pid);
  REQUIRE(r.ok());
  return *r;
}

// A ceph-osd -i ID -c /etc/ceph/ceph.conf at PID in the proc tree ROOT, started at START_TIME,
// whose ceph.conf in its root names kFsid.
void add_osd(const std::filesystem::path& root, pid_t pid, int id, std::uint64_t start_time) {
  namespace fs = std::filesystem;
  const fs::path dir = root / std::to_string(pid);
  fs::create_directories(dir / "root/etc/ceph");
  std::ofstream(dir / "stat") << pid << " (ceph-osd) S 1 " << pid << " " << pid
                              << " 0 -1 4194560 0 0 0 0 0 0 0 0 0 0 0 0 " << start_time
                              << " 0 0 0 0 0 0 0 0 0 0\n";
  std::ofstream(dir / "cmdline") << "/usr/bin/ceph-osd" << '\0' << "-i" << '\0' << id << '\0'
                                 << "-c" << '\0' << "/etc/ceph/ceph.conf" << '\0';
  std::ofstream(dir / "maps") << "55d0c0000000-55d0c0001000 r--p 00000000 fd:00 1 /usr/bin/x\n";
  fs::create_symlink("/usr/bin/ceph-osd", dir / "exe");
  std::ofstream(dir / "root/etc/ceph/ceph.conf") << "[global]\nfsid = " << kFsid << "\n";
}

}  // namespace

TEST_CASE("every numeric entry is listed, nothing else", "[proc]") {
  auto listed = ProcReader(kProc).list_pids();
  REQUIRE(listed.ok());
  auto pids = *listed;
  std::sort(pids.begin(), pids.end());
  CHECK(pids == std::vector<pid_t>{2, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112});
}

TEST_CASE("a proc root that cannot be listed is an error, not an empty list", "[proc]") {
  auto listed = ProcReader(std::string(kProc) + "/no-such-dir").list_pids();
  REQUIRE_FALSE(listed.ok());
  CHECK(listed.error().message.find("no-such-dir") != std::string::npos);
}

TEST_CASE("a process is read from stat, cmdline and exe", "[proc]") {
  const ProcReader proc(kProc);
  const auto p = must_read(proc, 101);
  CHECK(p.comm == "ceph-osd");
  CHECK(p.state == 'S');
  CHECK(p.start_time == 1000);
  CHECK_FALSE(p.kernel_thread);
  CHECK(p.exe == "/usr/bin/ceph-osd");
  CHECK_FALSE(p.exe_deleted);
  CHECK(p.argv == std::vector<std::string>{"/usr/bin/ceph-osd", "-f", "--cluster", "ceph", "--id",
                                           "3", "--setuser", "ceph"});
}

TEST_CASE("a deleted executable is flagged and its path kept", "[proc]") {
  const auto p = must_read(ProcReader(kProc), 106);
  CHECK(p.exe == "/usr/bin/ceph-osd");
  CHECK(p.exe_deleted);
}

TEST_CASE("zombies and kernel threads are read but never targets", "[proc]") {
  const ProcReader proc(kProc);
  const Config::Discovery cfg;
  const Classifier classify(proc, cfg);
  const auto zombie = must_read(proc, 107);
  CHECK(zombie.state == 'Z');
  CHECK_FALSE(classify.classify(zombie).has_value());
  const auto kthread = must_read(proc, 2);
  CHECK(kthread.kernel_thread);
  CHECK_FALSE(classify.classify(kthread).has_value());
}

TEST_CASE("a process that vanished mid-scan is reported gone, not an error", "[proc]") {
  auto r = ProcReader(kProc).read(108);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kNotFound);
  CHECK_FALSE(ProcReader(kProc).read(99999).ok());
}

TEST_CASE("a comm with spaces and parentheses is parsed from the last parenthesis", "[proc]") {
  const auto p = must_read(ProcReader(kProc), 110);
  CHECK(p.comm == "a) (b c");
  CHECK(p.state == 'S');
}

TEST_CASE("malformed stat lines are rejected", "[proc]") {
  ProcessInfo p;
  CHECK_FALSE(parse_stat("", p));
  CHECK_FALSE(parse_stat("12 (x) S 1 2", p));
  CHECK_FALSE(parse_stat("12 no-parens S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", p));
  CHECK_FALSE(
      parse_stat("12 (x) S 1 2 3 4 5 notanumber 7 8 9 10 11 12 13 14 15 16 17 18 19 20", p));
}

TEST_CASE("a command line splits at NULs, the last one optional", "[proc]") {
  using namespace std::string_view_literals;
  CHECK(parse_cmdline(""sv).empty());
  CHECK(parse_cmdline("ceph-osd\0--id\0003\0"sv) ==
        std::vector<std::string>{"ceph-osd", "--id", "3"});
  CHECK(parse_cmdline("a\0\0b"sv) == std::vector<std::string>{"a", "", "b"});
  CHECK(parse_cmdline("no-nul"sv) == std::vector<std::string>{"no-nul"});
}

TEST_CASE("a maps line names a library by the file name's prefix", "[proc]") {
  const std::vector<std::string> libs = {"librados.so.2"};
  CHECK(maps_line_has_library(
      "7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/librados.so.2.0.0", libs));
  CHECK_FALSE(maps_line_has_library("7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/librbd.so.1", libs));
  CHECK_FALSE(maps_line_has_library("7f00-7f10 rw-p 00000000 00:00 0 [heap]", libs));
  CHECK_FALSE(maps_line_has_library("/librados.so.2/", libs));
  // mapped as data (read through mmap, not run)
  CHECK_FALSE(maps_line_has_library(
      "7f00-7f10 r--p 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/librados.so.2.0.0", libs));
  CHECK_FALSE(maps_line_has_library("7f00-7f10 r-", libs));
}

TEST_CASE("every ceph-osd command line form gives osd.N", "[classify]") {
  CHECK(parse_osd_args({"ceph-osd", "--id", "3"}).id == 3u);
  CHECK(parse_osd_args({"ceph-osd", "--id=8"}).id == 8u);
  CHECK(parse_osd_args({"ceph-osd", "-i", "4"}).id == 4u);
  CHECK(parse_osd_args({"ceph-osd", "-n", "osd.5"}).id == 5u);
  CHECK(parse_osd_args({"ceph-osd", "--name", "osd.6"}).id == 6u);
  CHECK(parse_osd_args({"ceph-osd", "--name=osd.7"}).id == 7u);
  CHECK_FALSE(parse_osd_args({"ceph-osd", "--name", "mon.a"}).id.has_value());
  CHECK_FALSE(parse_osd_args({"ceph-osd", "--id", "x1"}).id.has_value());
  CHECK_FALSE(parse_osd_args({"ceph-osd", "--id"}).id.has_value());
  const auto a = parse_osd_args(
      {"ceph-osd", "--cluster", "prod", "--fsid", kFsid, "-c", "/etc/ceph/prod.conf"});
  CHECK(a.cluster == "prod");
  CHECK(a.fsid == kFsid);
  CHECK(a.conf_path == "/etc/ceph/prod.conf");
}

TEST_CASE("OSDs in the fixture tree are classified with their fsid", "[classify]") {
  const ProcReader proc(kProc);
  const Config::Discovery cfg;
  const Classifier classify(proc, cfg);
  // classify() reads no file the process names; find_fsid() (off the daemon loop) does.
  auto osd = [&](pid_t pid) {
    const auto info = must_read(proc, pid);
    auto t = classify.classify(info);
    INFO("pid " << pid);
    REQUIRE(t.has_value());
    CHECK(t->kind == TargetKind::kCephOsd);
    if (t->fsid.empty()) {
      t->fsid = find_fsid(proc, pid, parse_osd_args(info.argv)).fsid;
    }
    return *t;
  };
  const auto a = osd(101);  // fsid from the OSD data dir, read through the process's root
  CHECK(a.ceph_daemon == "osd.3");
  CHECK(a.fsid == kFsid);
  const auto b = osd(102);  // fsid from [global] of its -c conf; [osd] is ignored
  CHECK(b.ceph_daemon == "osd.4");
  CHECK(b.cluster == "prod");
  CHECK(b.fsid == kFsid);
  CHECK(osd(103).ceph_daemon == "osd.5");
  CHECK(osd(103).fsid.empty());
  CHECK(osd(104).fsid == kFsid);
  const auto e = osd(105);  // an invalid --fsid is dropped, not trusted
  CHECK(e.ceph_daemon == "osd.7");
  CHECK(e.fsid.empty());
  CHECK(osd(106).ceph_daemon == "osd.9");  // deleted binary: still an OSD
  CHECK(osd(112).fsid.empty());            // a conf path with .. is refused
  CHECK_FALSE(classify.classify(must_read(proc, 111)).has_value());  // no usable id
}

TEST_CASE("librados clients are found by their mappings and named by comm", "[classify]") {
  const ProcReader proc(kProc);
  Config::Discovery cfg;
  auto t = Classifier(proc, cfg).classify(must_read(proc, 109));
  REQUIRE(t.has_value());
  CHECK(t->kind == TargetKind::kRadosClient);
  CHECK(t->process == "rados");
  cfg.rados_clients = false;
  CHECK_FALSE(Classifier(proc, cfg).classify(must_read(proc, 109)).has_value());
}

TEST_CASE("operator matchers pick programs by comm or exe", "[classify]") {
  const ProcReader proc(kProc);
  Config::Discovery cfg;
  CHECK_FALSE(Classifier(proc, cfg).classify(must_read(proc, 110)).has_value());
  Matcher by_exe;
  by_exe.exe_pattern = "^/opt/";
  by_exe.exe = std::regex(by_exe.exe_pattern);
  by_exe.name = "evil";
  cfg.matchers.push_back(by_exe);
  auto t = Classifier(proc, cfg).classify(must_read(proc, 110));
  REQUIRE(t.has_value());
  CHECK(t->kind == TargetKind::kMatched);
  CHECK(t->process == "evil");
  Matcher by_comm;
  by_comm.comm = std::regex("^rados$");
  cfg.matchers = {by_comm};
  auto r = Classifier(proc, cfg).classify(must_read(proc, 109));
  REQUIRE(r.has_value());
  CHECK(r->kind == TargetKind::kMatched);  // matchers come before the librados check
  CHECK(r->process == "rados");
}

TEST_CASE("files are read only inside the process's root", "[proc]") {
  const ProcReader proc(kProc);
  CHECK(proc.read_in_root(101, "/var/lib/ceph/osd/ceph-3/ceph_fsid", 64).ok());
  CHECK_FALSE(proc.read_in_root(101, "/var/lib/../../../etc/passwd", 64).ok());
  CHECK_FALSE(proc.read_in_root(101, "relative/path", 64).ok());
  auto capped = proc.read_in_root(101, "/var/lib/ceph/osd/ceph-3/ceph_fsid", 8);
  REQUIRE_FALSE(capped.ok());  // over its cap: refused, not cut
  CHECK(capped.error().reason == "too_large");
}

TEST_CASE("a scan that cannot list /proc forgets no tracked process", "[proc]") {
  TargetRegistry registry({}, std::chrono::seconds(10), 100);
  Discovery discovery(ProcReader(std::string(kProc) + "/no-such-dir"), registry);
  ProcessInfo info;
  info.pid = 101;
  info.start_time = 1000;
  TargetIdentity osd;
  osd.kind = TargetKind::kCephOsd;
  osd.ceph_daemon = "osd.3";
  const auto now = Clock::now();
  REQUIRE(registry.track(info, osd, now).ok());
  discovery.scan(now);
  CHECK(registry.is_tracked(101, 1000));
}

TEST_CASE("a host's OSDs found in one scan each get their fsid", "[proc][discovery]") {
  // A proc tree of 40 OSDs, each naming a ceph.conf in its root: far more than the lookups
  // that may run at once (Discovery::kMaxLookups), as on a dense host when the daemon starts.
  namespace fs = std::filesystem;
  constexpr int kOsds = 40;
  const test::TempDir tmp("cephscope-osds");
  const fs::path& root = tmp.path();
  for (int i = 0; i < kOsds; ++i) {
    add_osd(root, 2000 + i, i, 1000 + i);
  }
  TargetRegistry registry({}, std::chrono::seconds(10), 100);
  Discovery discovery(ProcReader(root.string()), registry);
  discovery.scan(Clock::now());
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (registry.tracked_processes() < kOsds && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    discovery.recheck_due(Clock::now());
  }
  const auto targets = registry.snapshot();
  REQUIRE(targets.size() == kOsds);
  for (const auto& target : targets) {
    INFO(target.identity.ceph_daemon);
    CHECK(target.identity.fsid == kFsid);
  }
  CHECK(registry.refusals().empty());  // none tracked for want of a lookup
}

TEST_CASE("an OSD whose fsid lookup returns after the timeout is tracked again with its fsid",
          "[proc][discovery]") {
  // The lookup stands in for a file system that stalls: it waits until the test lets it go,
  // then reads the OSD's ceph.conf as the daemon does.
  namespace fs = std::filesystem;
  const test::TempDir tmp("cephscope-late");
  const fs::path& root = tmp.path();
  const pid_t pid = 3000;
  add_osd(root, pid, 7, 5000);

  auto stalled = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = stalled->get_future().share();
  auto stalling_lookup = [released](const ProcReader& proc, pid_t p, const OsdArgs& args,
                                    const CgroupFacts& cgroup) {
    released.wait();
    return find_fsid(proc, p, args, cgroup);
  };
  TargetRegistry registry({}, std::chrono::seconds(10), 100);
  Discovery discovery(ProcReader(root.string()), registry, stalling_lookup);
  const auto start = Clock::now();
  discovery.scan(start);
  discovery.recheck_due(start + Discovery::kLookupTimeout / 2);
  CHECK(registry.tracked_processes() == 0);  // its lookup is under way

  discovery.recheck_due(start + Discovery::kLookupTimeout);  // timed out: tracked without
  auto targets = registry.snapshot();
  REQUIRE(targets.size() == 1);
  CHECK(targets[0].identity.ceph_daemon == "osd.7");
  CHECK(targets[0].identity.fsid.empty());
  CHECK(targets[0].pids == std::vector<pid_t>{pid});
  const std::uint32_t fsid_less = targets[0].id;
  CHECK(registry.refusals() == std::map<std::string, std::uint64_t>{{"timeout", 1}});

  stalled->set_value();  // the file system answers
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  auto tracked_fsid = [&] {
    for (const auto& t : registry.snapshot()) {
      if (!t.pids.empty() && !t.identity.fsid.empty()) {
        return t.identity.fsid;
      }
    }
    return std::string();
  };
  while (tracked_fsid().empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    discovery.recheck_due(Clock::now());
  }
  targets = registry.snapshot();
  REQUIRE(targets.size() == 2);  // the fsid-less target stays, with no process, for the TTL
  for (const auto& t : targets) {
    INFO("target " << t.id << " fsid '" << t.identity.fsid << "'");
    if (t.id == fsid_less) {
      CHECK(t.pids.empty());
      CHECK(t.identity.fsid.empty());
    } else {
      CHECK(t.identity.fsid == kFsid);
      CHECK(t.identity.ceph_daemon == "osd.7");
      CHECK(t.pids == std::vector<pid_t>{pid});
    }
  }
  CHECK(registry.is_tracked(pid, 5000));
}
