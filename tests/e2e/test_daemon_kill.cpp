// e2e (root, live test cluster): kill -9 of the daemon while its uprobes sit in loaded OSDs.
//
// A daemon with only the osd collector attaches its probes to the cluster's three OSDs. While a
// 4 KiB rados bench writes, the test kills it with SIGKILL, so no destructor and no cleanup of
// its own runs. Then:
//   - none of the programs and links it held exists any more (their ids, from its fdinfo);
//   - no uprobe of it remains in any OSD: every int3 (0xcc) it added to an OSD's executable code
//     in memory, where the file has another byte, is the file's byte again (a uprobe is an int3
//     written into the process's copy of the page; while the daemon is attached, one per probe);
//   - the bench ends without an error and every OSD still runs: the OSDs kept serving;
//   - a daemon started again attaches its probes again and counts the next bench's writes.
// The times from SIGKILL to the kernel's cleanup and from the restart to attachment are printed.
//
// And the capabilities of docs/operations.md suffice for the OSD's uprobes: a daemon run as
// user nobody with exactly the set this kernel needs (the five of every kernel, plus
// CAP_SYS_ADMIN where the daemon finds perf events or the uprobe PMU refused without it),
// at kernel.perf_event_paranoid 2 and 3, attaches every OSD probe and counts a bench's writes;
// where CAP_SYS_ADMIN is needed, the daemon without it reports the probes refused.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ceph_harness.h"
#include "osd_control.h"
#include "support/bpf_held.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"
#include "support/privileges.h"

using namespace cephscope::test;
using namespace std::chrono_literals;

namespace {

std::string osd_name(int id) {
  return "osd." + std::to_string(id);
}

// Tier 2 always on: every probe of the table is in the OSDs, and must leave with the daemon.
std::string daemon_config() {
  return osd_only_config(", detail: always");
}

// A breakpoint: the file and the offset in it where a process's code is int3 and the file's is
// not. Sets of them, not counts: another tracer's (or a stray) byte that comes or goes while the
// test runs must neither hide nor fake one of the daemon's.
using Breakpoint = std::pair<std::string, std::uint64_t>;
using Breakpoints = std::set<Breakpoint>;

// The uprobes installed in a process: its executable mappings' bytes that differ from its files
// and are int3 there. Reads /proc/PID/mem against /proc/PID/map_files.
Breakpoints breakpoints_in(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream maps(proc + "/maps");
  const int mem = open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(mem >= 0);
  Breakpoints found;
  std::vector<unsigned char> live, file;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream f(line);
    std::string range, perms, offset_hex, dev, inode, path;
    f >> range >> perms >> offset_hex >> dev >> inode >> path;
    if (perms.size() < 3 || perms[2] != 'x' || path.empty() || path[0] != '/') {
      continue;
    }
    const auto dash = range.find('-');
    const std::uint64_t start = std::stoull(range.substr(0, dash), nullptr, 16);
    const std::uint64_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    const std::uint64_t offset = std::stoull(offset_hex, nullptr, 16);
    const std::string map_file = proc + "/map_files/";
    const int backing = open((map_file + range).c_str(), O_RDONLY | O_CLOEXEC);
    if (backing < 0) {
      continue;  // the file is gone (an upgraded package): nothing to compare with
    }
    const std::size_t size = end - start;
    live.resize(size);
    file.resize(size);
    const auto got_live = pread(mem, live.data(), size, static_cast<off_t>(start));
    const auto got_file = pread(backing, file.data(), size, static_cast<off_t>(offset));
    close(backing);
    const std::size_t n =
        static_cast<std::size_t>(std::max<ssize_t>(0, std::min(got_live, got_file)));
    for (std::size_t i = 0; i < n; ++i) {
      if (live[i] != file[i] && live[i] == 0xcc) {
        found.emplace(path, offset + i);
      }
    }
  }
  close(mem);
  return found;
}

std::map<int, Breakpoints> breakpoints(const ClusterInfo& cluster) {
  std::map<int, Breakpoints> out;
  for (const auto& o : cluster.osds) {
    out[o.id] = breakpoints_in(o.pid);
  }
  return out;
}

// What is in `now` and not in `base`, OSD by OSD.
std::map<int, Breakpoints> added(const std::map<int, Breakpoints>& now,
                                 const std::map<int, Breakpoints>& base) {
  std::map<int, Breakpoints> out;
  for (const auto& [id, set] : now) {
    auto& mine = out[id];
    std::set_difference(set.begin(), set.end(), base.at(id).begin(), base.at(id).end(),
                        std::inserter(mine, mine.end()));
  }
  return out;
}

// The daemon's breakpoints still in the OSDs: `probes` that `now` holds.
std::size_t left_behind(const std::map<int, Breakpoints>& now,
                        const std::map<int, Breakpoints>& probes) {
  std::size_t n = 0;
  for (const auto& [id, set] : probes) {
    for (const auto& b : set) {
      n += now.at(id).count(b);
    }
  }
  return n;
}

void print_breakpoints(const char* when, const std::map<int, Breakpoints>& b) {
  std::printf("uprobes in the OSDs %s:", when);
  for (const auto& [id, set] : b) {
    std::printf(" %s %zu", osd_name(id).c_str(), set.size());
  }
  std::printf("\n");
  std::fflush(stdout);
}

// Every osd probe of every OSD reports attached ("ok"), and each OSD has at least one.
bool all_probes_attached(const ClusterInfo& cluster, const Metrics& m) {
  for (const auto& o : cluster.osds) {
    const auto series =
        m.find("cephscope_probe_attached", {{"collector", "osd"}, {"target", osd_name(o.id)}});
    if (series.empty()) {
      return false;
    }
    for (const auto& s : series) {
      if (s.labels.at("reason") != "ok" || s.value != 1) {
        return false;
      }
    }
  }
  return true;
}

double writes_counted(const ClusterInfo& cluster, const Metrics& m) {
  double n = 0;
  for (const auto& o : cluster.osds) {
    n += m.sum("cephscope_osd_op_seconds_count",
               {{"ceph_daemon", osd_name(o.id)}, {"fsid", cluster.fsid}, {"op", "write"}});
  }
  return n;
}

BenchSummary write_bench(const ClusterInfo& cluster, int seconds) {
  BenchOptions opt;
  opt.mode = BenchMode::kWrite;
  opt.seconds = seconds;
  opt.block_size = 4096;
  opt.no_cleanup = true;
  return run_rados_bench(cluster, opt);
}

// A 4 s write bench: the daemon counts at least its writes on the primaries.
void check_bench_counted(const ClusterInfo& cluster, Daemon& daemon, const char* who) {
  const double w0 = writes_counted(cluster, daemon.scrape());
  const auto w = write_bench(cluster, 4);
  std::this_thread::sleep_for(1500ms);
  const double w1 = writes_counted(cluster, daemon.scrape());
  std::printf("%s: counted %.0f write ops for rados bench's %llu writes\n", who, w1 - w0,
              static_cast<unsigned long long>(w.total_ops));
  CHECK(w1 - w0 >= static_cast<double>(w.total_ops));
}

}  // namespace

TEST_CASE("kill -9 of the daemon leaves no probe in the OSDs, which keep serving",
          "[e2e][ceph][daemon][kill]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.osds.size() == 3);
  rados_cleanup(cluster);

  // What is in the OSDs' code before this daemon is the baseline: a daemon of the test before may
  // still be tearing down its uprobes (waited for, bounded), and a byte another tracer (or the
  // kernel) left is not this daemon's. The daemon's probes are the breakpoints it added; only
  // those are checked, so one of those others that comes or goes meanwhile cannot decide.
  auto before = breakpoints(cluster);
  for (int i = 0; i < 100 && std::any_of(before.begin(), before.end(),
                                         [](const auto& b) { return !b.second.empty(); });
       ++i) {
    std::this_thread::sleep_for(100ms);
    before = breakpoints(cluster);
  }
  print_breakpoints("before the daemon", before);
  for (const auto& [id, set] : before) {
    for (const auto& [path, offset] : set) {
      WARN(osd_name(id) << ": a breakpoint not this daemon's at " << path << "+0x" << std::hex
                        << offset << ", left out of the checks");
    }
  }

  const std::string dir = test_dir(cluster.dir);
  HeldIds held;
  {
    Daemon daemon(dir, daemon_config());
    DaemonLogOnFailure print_log{daemon};
    REQUIRE(daemon.wait_ready(60s));
    const auto attached =
        poll_until([&] { return all_probes_attached(cluster, daemon.scrape()); }, 180s, 200ms);
    REQUIRE(attached.has_value());
    std::printf("osd probes attached %.1f s after /readyz\n", *attached);
    const auto during = breakpoints(cluster);
    print_breakpoints("while attached", during);
    const auto probes = added(during, before);
    for (const auto& [id, set] : probes) {
      INFO(osd_name(id));
      CHECK(!set.empty());
    }
    held = held_by(daemon.pid());
    REQUIRE(!held.progs.empty());
    REQUIRE(!held.links.empty());

    auto bench = std::async(std::launch::async, [&] { return write_bench(cluster, 10); });
    std::this_thread::sleep_for(3s);
    const auto t_kill = std::chrono::steady_clock::now();
    // The kernel releases each uprobe link as the killed process's files close, before the
    // process is reaped: about 0.1 s a link here (29 links with one 3-OSD cluster, 72 with
    // CI's three clusters), longer on a loaded host.
    const auto rc = daemon.kill_hard(60s);
    std::printf("SIGKILL: the daemon (%zu links) was reaped after %.2f s\n", held.links.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_kill).count());
    REQUIRE(rc == 128 + SIGKILL);

    // The kernel frees what a killed process held as its files close; give RCU a moment.
    const auto clean = poll_until(
        [&] {
          for (auto id : held.progs) {
            if (prog_exists(id)) {
              return false;
            }
          }
          for (auto id : link_ids()) {
            if (held.links.contains(id)) {
              return false;
            }
          }
          return left_behind(breakpoints(cluster), probes) == 0;
        },
        30s, 100ms);
    std::printf("after SIGKILL: %zu programs, %zu links and every uprobe gone in %.2f s\n",
                held.progs.size(), held.links.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_kill).count());
    for (auto id : held.progs) {
      INFO("program id " << id);
      CHECK_FALSE(prog_exists(id));
    }
    const auto after = breakpoints(cluster);
    print_breakpoints("after SIGKILL", after);
    CHECK(left_behind(after, probes) == 0);
    REQUIRE(clean.has_value());

    const auto served = bench.get();  // throws when rados bench failed
    std::printf("rados bench across the kill: %llu writes, %.0f IOPS\n",
                static_cast<unsigned long long>(served.total_ops), served.avg_iops);
    CHECK(served.total_ops > 0);
    for (const auto& o : cluster.osds) {
      INFO(osd_name(o.id) << " pid " << o.pid);
      CHECK(alive(o.pid));
    }
  }

  // A new daemon attaches again and counts.
  Daemon again(dir, daemon_config());
  DaemonLogOnFailure print_log{again};
  REQUIRE(again.wait_ready(60s));
  const auto reattached =
      poll_until([&] { return all_probes_attached(cluster, again.scrape()); }, 180s, 200ms);
  REQUIRE(reattached.has_value());
  std::printf("restarted daemon: osd probes attached %.1f s after /readyz\n", *reattached);
  const auto restarted = breakpoints(cluster);
  print_breakpoints("after the restart", restarted);
  const auto probes_again = added(restarted, before);
  check_bench_counted(cluster, again, "restarted daemon");
  const auto rc = again.stop(20s);
  REQUIRE(rc.has_value());
  CHECK(*rc == 0);
  const auto stopped = breakpoints(cluster);
  print_breakpoints("after SIGTERM", stopped);
  for (const auto& [id, set] : probes_again) {
    INFO(osd_name(id) << " after SIGTERM");
    CHECK(!set.empty());
  }
  CHECK(left_behind(stopped, probes_again) == 0);
  rados_cleanup(cluster);
}

namespace {

// The daemon's config for the capability test: the repository's shipped profiles (Debian's
// 16.2.15 is among them, so no resolver runs) and a profile cache nobody may write.
std::string unprivileged_config(const std::string& dir) {
  return osd_only_config(", detail: always") + "profiles:\n  cache_dir: " + dir +
         "/cache\n  shipped_dirs: [" CEPHSCOPE_SOURCE_DIR "/config/profiles]\n";
}

// What the daemon started as root keeps on this kernel, from its log: CAP_SYS_ADMIN or not.
bool root_daemon_keeps_sys_admin(const std::string& dir, const ClusterInfo& cluster) {
  Daemon root(dir, unprivileged_config(dir));
  DaemonLogOnFailure print_log{root};
  REQUIRE(root.wait_ready(60s));
  REQUIRE(poll_until([&] { return all_probes_attached(cluster, root.scrape()); }, 180s, 200ms));
  REQUIRE(root.log_has("capabilities kept: ", 5s));
  const std::string log = root.log();
  const auto at = log.find("capabilities kept: ");
  const std::string kept = log.substr(at, log.find('\n', at) - at);
  std::printf("perf_event_paranoid=%d, started as root: %s\n", paranoid_level(), kept.c_str());
  REQUIRE(root.stop(20s) == 0);
  return kept.find("sys_admin") != std::string::npos;
}

}  // namespace

TEST_CASE("the documented capabilities attach the OSDs' uprobes, at perf_event_paranoid 2 and 3",
          "[e2e][ceph][daemon][caps]") {
  const int level = GENERATE(2, 3);
  const ParanoidLevel paranoid(level);
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  rados_cleanup(cluster);
  const std::string dir = test_dir(cluster.dir) + "/caps-" + std::to_string(level);
  std::filesystem::create_directories(dir + "/cache");
  for (const std::string& d : {dir, dir + "/cache"}) {
    std::filesystem::permissions(d, std::filesystem::perms::all);
  }

  // The root daemon mounts tracefs where it is missing; nobody could not.
  const bool needs_sys_admin = root_daemon_keeps_sys_admin(dir, cluster);
  const std::string exact = std::string(kDocumentedCaps) + (needs_sys_admin ? ",+sys_admin" : "");
  std::printf("perf_event_paranoid=%d: the set this kernel needs: %s\n", level, exact.c_str());

  if (needs_sys_admin) {
    // The need is real: without CAP_SYS_ADMIN the OSD probes are refused, and say so.
    Daemon without(dir, unprivileged_config(dir), as_nobody_argv(kDocumentedCaps, ""));
    DaemonLogOnFailure print_log{without};
    REQUIRE(without.wait_ready(60s));
    const auto refused = poll_until(
        [&] {
          const auto probes =
              without.scrape().find("cephscope_probe_attached", {{"collector", "osd"}});
          return !probes.empty() && std::all_of(probes.begin(), probes.end(), [](const Sample& s) {
            return s.value == 0 && s.labels.at("reason") == "permission_denied";
          });
        },
        60s, 200ms);
    CHECK(refused.has_value());
    REQUIRE(without.stop(20s) == 0);
  }

  Daemon daemon(dir, unprivileged_config(dir), as_nobody_argv(exact, ""));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  const auto attached =
      poll_until([&] { return all_probes_attached(cluster, daemon.scrape()); }, 180s, 200ms);
  REQUIRE(attached.has_value());
  std::printf("as nobody with %s: osd probes attached %.1f s after /readyz\n", exact.c_str(),
              *attached);
  check_bench_counted(cluster, daemon, "as nobody");
  REQUIRE(daemon.stop(20s) == 0);
  rados_cleanup(cluster);
}
