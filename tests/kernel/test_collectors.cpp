// The collectors against the running kernel: a program with exactly known IO, tracked by
// the real daemon, must be counted exactly.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "bpf/cephscope.h"
#include "config/syscall_names.h"
#include "kernel/io_workload.h"
#include "kernel/vfs_hook_probe.h"

using namespace cephscope::test;
using Labels = std::map<std::string, std::string>;

namespace {

const std::string kTracked = "io_driver";

// Every histogram series has all 26 buckets, cumulative, with +Inf equal to _count.
void check_histogram_shape(const Metrics& m, const std::string& name, const Labels& match) {
  const auto buckets = m.find(name + "_bucket", match);
  REQUIRE(buckets.size() == 26);
  double prev = 0;
  std::set<std::string> les;
  for (const auto& b : buckets) {
    CHECK(b.value >= prev);
    prev = b.value;
    les.insert(b.labels.at("le"));
  }
  CHECK(les.size() == 26);
  CHECK(les.contains("+Inf"));
  CHECK(m.find(name + "_bucket",
               [&] {
                 auto l = match;
                 l["le"] = "+Inf";
                 return l;
               }())
            .at(0)
            .value == m.sum(name + "_count", match));
  CHECK(m.sum(name + "_sum", match) > 0);
}

}  // namespace

// The default set is the storage syscalls: pwrite64 and fdatasync are counted, read is not
// loaded at all (no program, no series).
TEST_CASE("the syscall collector's default set is the storage syscalls", "[kernel][syscall]") {
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  const IoPattern io;
  run_io(daemon, dir, io);
  const Metrics m = daemon.scrape();
  INFO("daemon log:\n" << daemon.log());
  auto count = [&](const std::string& syscall) {
    return m.sum("cephscope_syscall_seconds_count", {{"process", kTracked}, {"syscall", syscall}});
  };
  CHECK(count("pwrite64") == io.writes);
  CHECK(count("fdatasync") == io.syncs);
  CHECK(m.find("cephscope_syscall_seconds_count", {{"syscall", "read"}}).empty());
  const auto attached = m.find("cephscope_probe_attached", {{"collector", "syscall"}});
  REQUIRE(attached.size() == 2 * cephscope::kStorageSyscalls.size());
  for (const auto& p : attached) {
    CHECK_FALSE(p.labels.at("probe").ends_with("_read"));  // the entry and exit of read(2)
  }
}

// Both hooks, forced. fentry/fexit run for the traced syscalls only; syscall tracepoints put
// every syscall of every process on the slow path, so `hook: auto` takes fentry where the
// kernel allows it (probed here with the test's own programs, vfs_hook_probe.h).
TEST_CASE("the syscall collector counts exactly through fentry and through tracepoints",
          "[kernel][syscall]") {
  const std::string dir = fresh_dir();
  const VfsHookProbe fentry = probe_vfs_hook("fentry", dir);
  INFO("fentry here: " << (fentry.works ? "works" : fentry.reason));
  for (const std::string hook : {"auto", "fentry", "tracepoint"}) {
    DYNAMIC_SECTION("hook: " << hook) {
      Daemon daemon(dir, tracking_config("  syscall: {hook: " + hook + "}\n"));
      REQUIRE(daemon.wait_ready());
      const IoPattern io;
      run_io(daemon, dir, io);
      const Metrics m = daemon.scrape();
      INFO("daemon log:\n" << daemon.log());
      const std::string used = hook != "auto" ? hook : fentry.works ? "fentry" : "tracepoint";
      if (used == "fentry" && !fentry.works) {
        // Forced and refused: unavailable with the reason, and the rest of the daemon runs on.
        CHECK(m.sum("cephscope_collector_up",
                    {{"collector", "syscall"}, {"hook", "unavailable"}}) == 0);
        const auto probes = m.find("cephscope_probe_attached", {{"collector", "syscall"}});
        REQUIRE_FALSE(probes.empty());
        for (const auto& p : probes) {
          CHECK(p.value == 0);
          CHECK(p.labels.at("reason") != "ok");
        }
        CHECK(m.find("cephscope_syscall_seconds_count", {{"process", kTracked}}).empty());
        CHECK(m.sum("cephscope_collector_up", {{"collector", "block"}}) == 1);
        continue;
      }
      CHECK(m.sum("cephscope_collector_up", {{"collector", "syscall"}, {"hook", used}}) == 1);
      auto count = [&](const std::string& syscall) {
        return m.sum("cephscope_syscall_seconds_count",
                     {{"process", kTracked}, {"syscall", syscall}});
      };
      CHECK(count("pwrite64") == io.writes);
      CHECK(m.sum("cephscope_syscall_bytes_total",
                  {{"process", kTracked}, {"syscall", "pwrite64"}}) == io.writes * io.size);
      CHECK(count("fdatasync") == io.syncs);
      CHECK(m.sum("cephscope_syscall_errors_total", {{"process", kTracked}}) == 0);
      CHECK_FALSE(m.any_with_label("process", "io_other"));
      const std::string entry = used == "fentry" ? "fentry_sys_" : "sys_enter_";
      const std::string exit = used == "fentry" ? "fexit_sys_" : "sys_exit_";
      for (const std::string& probe :
           {entry + "pwrite64", exit + "pwrite64", entry + "fdatasync"}) {
        INFO(probe);
        CHECK(m.sum("cephscope_probe_attached", {{"collector", "syscall"}, {"probe", probe}}) == 1);
      }
    }
  }
}

#if defined(__aarch64__)
constexpr const char* kFdatasyncFunction = "__arm64_sys_fdatasync";
#else
constexpr const char* kFdatasyncFunction = "__x64_sys_fdatasync";
#endif

// Another tool can leave a kernel function no room for one more fentry program (its BPF
// trampoline holds a few dozen). Under `hook: auto` a collector then leaves fentry for its
// next hook, which takes every probe; forced to fentry, it keeps what attached.
TEST_CASE("a hook that loads but will not attach gives way to the next one",
          "[kernel][syscall][vfs]") {
  const std::string dir = fresh_dir();
  const auto hooks = probe_vfs_hooks(dir);  // fentry, then kprobe
  INFO("fentry here: " << (hooks[0].works ? "works" : hooks[0].reason));
  INFO("kprobe here: " << (hooks[1].works ? "works" : hooks[1].reason));
  const FullTrampoline fdatasync(kFdatasyncFunction);
  INFO(kFdatasyncFunction << ": " << fdatasync.programs() << " programs, then "
                          << (fdatasync.full() ? "full" : fdatasync.reason()));
  if (!hooks[0].works) {
    // No fentry, no trampoline to fill: the collectors are on their fallbacks already.
    CHECK_FALSE(fdatasync.full());
    return;
  }
  REQUIRE(fdatasync.full());
  const FullTrampoline vfs_write("vfs_write");
  INFO("vfs_write: " << vfs_write.programs() << " programs, then "
                     << (vfs_write.full() ? "full" : vfs_write.reason()));
  REQUIRE(vfs_write.full());
  const IoPattern io;
  auto count = [](const Metrics& m, const std::string& metric, const Labels& labels) {
    Labels match = labels;
    match.emplace("process", kTracked);
    return m.sum(metric, match);
  };
  // Both daemons in one pass, one after the other: filling the trampolines is the slow part
  // (each program added rewrites it), so it is done once, not once per SECTION.
  {
    INFO("hook: auto");
    Daemon daemon(dir, tracking_config());
    REQUIRE(daemon.wait_ready());
    run_io(daemon, dir, io);
    const Metrics m = daemon.scrape();
    const std::string log = daemon.log();
    INFO("daemon log:\n" << log);
    CHECK(m.sum("cephscope_collector_up", {{"collector", "syscall"}, {"hook", "tracepoint"}}) == 1);
    CHECK(log.find("syscall: fentry unusable (fentry: fentry_sys_fdatasync: attach failed") !=
          std::string::npos);
    CHECK(count(m, "cephscope_syscall_seconds_count", {{"syscall", "pwrite64"}}) == io.writes);
    CHECK(count(m, "cephscope_syscall_seconds_count", {{"syscall", "fdatasync"}}) == io.syncs);
    // vfs: kprobes where the kernel has them, else fentry once more, less vfs_write.
    const std::string vfs_hook = hooks[1].works ? "kprobe" : "fentry";
    CHECK(m.sum("cephscope_collector_up", {{"collector", "vfs"}, {"hook", vfs_hook}}) == 1);
    CHECK(count(m, "cephscope_vfs_seconds_count", {{"op", "write"}}) ==
          (hooks[1].works ? io.writes : 0));
    CHECK(count(m, "cephscope_vfs_seconds_count", {{"op", "read"}}) == io.reads);
  }
  {
    INFO("hook: fentry");
    const std::string fentry_dir = fresh_dir();
    Daemon daemon(fentry_dir, tracking_config("  syscall: {hook: fentry}\n"));
    REQUIRE(daemon.wait_ready());
    run_io(daemon, fentry_dir, io);
    const Metrics m = daemon.scrape();
    INFO("daemon log:\n" << daemon.log());
    CHECK(m.sum("cephscope_collector_up", {{"collector", "syscall"}, {"hook", "fentry"}}) == 1);
    for (const std::string probe : {"fentry_sys_fdatasync", "fexit_sys_fdatasync"}) {
      const auto p =
          m.find("cephscope_probe_attached", {{"collector", "syscall"}, {"probe", probe}});
      REQUIRE(p.size() == 1);
      CHECK(p[0].value == 0);
      CHECK(p[0].labels.at("reason") != "ok");
    }
    CHECK(count(m, "cephscope_syscall_seconds_count", {{"syscall", "pwrite64"}}) == io.writes);
    CHECK(count(m, "cephscope_syscall_seconds_count", {{"syscall", "fdatasync"}}) == 0);
  }
}

// The filter's slots (bpf/targets.bpf.h): a tracked process holds its slot; a second tracked
// process in the same slot is found in the hash, and an untracked one there is not counted.
TEST_CASE("processes that share a slot of the tracked filter are told apart",
          "[kernel][syscall][discovery]") {
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  // Three free pids of one slot, lowest first. The lowest pid holds a slot (daemon side):
  // a tracked driver that never gets its go file and does no IO.
  const auto pids = free_pids_in_slot_of(getpid(), 3);
  std::ofstream(dir + "/holder.dat").put('\n');
  const auto holder = spawn_as(
      pids[0], {CEPHSCOPE_IO_DRIVER, dir + "/holder.dat", dir + "/never", "0", "4096", "0", "0"},
      dir + "/holder.log");
  REQUIRE(wait_target(daemon, kTracked, pids[0]));
  const IoPattern io;
  CHECK(run_io(daemon, dir, io, {pids[1], pids[2]}) == pids[1]);
  const Metrics m = daemon.scrape();
  INFO("daemon log:\n" << daemon.log());
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", kTracked}, {"syscall", "pwrite64"}}) == io.writes);
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", kTracked}, {"syscall", "fdatasync"}}) == io.syncs);
  CHECK(m.find("cephscope_syscall_seconds_count", {{"process", "io_other"}}).empty());
}

// The in-flight slots (bpf/op_latency.bpf.h): one per thread id modulo OP_INFLIGHT_SLOTS,
// stored at entry without a look at what was there. A call whose slot another thread took
// while it waited finds that thread's id at its exit: lost as no_start, never timed with the
// other's start.
TEST_CASE("a call whose in-flight slot another thread took is counted lost and not timed",
          "[kernel][syscall]") {
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  INFO("daemon log:\n" << daemon.log());
  const auto [waiter_pid, taker_pid] = free_pids_apart(OP_INFLIGHT_SLOTS);
  const std::string fifo = dir + "/fifo";
  const std::string go = dir + "/go_wait";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const auto waiter = spawn_as(waiter_pid, {CEPHSCOPE_IO_DRIVER, "--wait-in-preadv2", fifo, go},
                               dir + "/waiter.log");
  REQUIRE(wait_target(daemon, kTracked, waiter_pid));
  const std::string pid = std::to_string(waiter_pid);
  const Labels no_start = {{"collector", "syscall"}, {"reason", "no_start"}};
  const Labels inflight_full = {{"collector", "syscall"}, {"reason", "inflight_full"}};
  const Metrics before = daemon.scrape();
  std::ofstream(go).put('\n');
  // In the call: /proc/PID/syscall starts with the number of the call it waits in.
  const auto in_preadv2 = [&] {
    std::string number;
    std::ifstream("/proc/" + pid + "/syscall") >> number;
    return number == std::to_string(SYS_preadv2);
  };
  for (int i = 0; i < 500 && !in_preadv2(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(in_preadv2());
  const IoPattern io;
  CHECK(run_io(daemon, dir, io, {.tracked = taker_pid}) == taker_pid);
  {
    std::ofstream(fifo) << 'x';  // the waiter holds the FIFO open read-write: no wait here
  }
  REQUIRE(waiter->wait(std::chrono::seconds(10)) == 0);
  const Metrics m = daemon.scrape();
  // The taker's calls are all timed; the waiter's one call is lost, once (both are io_driver).
  CHECK(m.sum("cephscope_syscall_seconds_count",
              {{"process", kTracked}, {"syscall", "pwrite64"}}) == io.writes);
  CHECK(m.sum("cephscope_syscall_seconds_count", {{"process", kTracked}, {"syscall", "preadv2"}}) ==
        0);
  CHECK(m.sum("cephscope_events_lost_total", no_start) ==
        before.sum("cephscope_events_lost_total", no_start) + 1);
  CHECK(m.sum("cephscope_events_lost_total", inflight_full) ==
        before.sum("cephscope_events_lost_total", inflight_full));
}

TEST_CASE("syscall and block collectors count a known IO pattern exactly",
          "[kernel][syscall][block]") {
  // Both flavours of the block collector, forced in turn: tp_btf and classic tracepoints.
  const std::string block_hook = GENERATE(as<std::string>{}, "tp_btf", "tracepoint");
  INFO("block hook " << block_hook);
  const std::string dir = fresh_dir();
  const auto disks = require_block_device(dir);
  // Per-target block latency is opt-in (the per-device series carry it): on here.
  Daemon daemon(dir,
                tracking_config("  block: {hook: " + block_hook +
                                ", target_histograms: true}\n"
                                "  syscall: {syscalls: [pwrite64, fdatasync, read, write]}\n"));
  REQUIRE(daemon.wait_ready());
  const Metrics ready = daemon.scrape();
  REQUIRE(ready.sum("cephscope_collector_up", {{"collector", "block"}, {"hook", block_hook}}) == 1);
  const Labels block_no_start = {{"collector", "block"}, {"reason", "no_start"}};
  const IoPattern io;
  run_io(daemon, dir, io);
  const Metrics m = daemon.scrape();
  INFO("daemon log:\n" << daemon.log());

  auto sc = [&](const std::string& metric, const std::string& syscall) {
    return m.sum(metric, {{"process", kTracked}, {"syscall", syscall}});
  };
  CHECK(sc("cephscope_syscall_seconds_count", "pwrite64") == io.writes);
  CHECK(sc("cephscope_syscall_bytes_total", "pwrite64") == io.writes * io.size);
  CHECK(sc("cephscope_syscall_seconds_count", "fdatasync") == io.syncs);
  CHECK(sc("cephscope_syscall_seconds_count", "read") == io.reads);
  CHECK(sc("cephscope_syscall_bytes_total", "read") == io.reads * io.size);
  CHECK(sc("cephscope_syscall_seconds_count", "write") == 0);
  CHECK(m.sum("cephscope_syscall_errors_total", {{"process", kTracked}}) == 0);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", kTracked}, {"layer", "syscall"}, {"direction", "write"}}) ==
        io.writes * io.size);
  check_histogram_shape(m, "cephscope_syscall_seconds",
                        {{"process", kTracked}, {"syscall", "pwrite64"}});

  // O_DIRECT writes reach the device as at least the bytes written, attributed to the driver.
  const double block_written =
      m.sum("cephscope_block_target_bytes_total", {{"process", kTracked}, {"op", "write"}});
  CHECK(block_written >= io.writes * io.size);
  CHECK(m.sum("cephscope_block_target_bytes_total", {{"process", kTracked}, {"op", "read"}}) >=
        io.reads * io.size);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", kTracked}, {"layer", "block"}, {"direction", "write"}}) ==
        block_written);
  CHECK(m.sum("cephscope_block_target_device_seconds_count",
              {{"process", kTracked}, {"op", "write"}}) >= 1);
  // Each O_DIRECT write is a bio that waited for a request (a submit sample) or merged into
  // one; the per-device series count every process's bios, the untracked twin's too.
  const double submitted = m.sum("cephscope_block_target_submit_seconds_count",
                                 {{"process", kTracked}, {"op", "write"}});
  const double merged = m.sum("cephscope_block_bio_merges_total", {{"op", "write"}});
  INFO("tracked write bios with a request " << submitted << ", write merges on the host "
                                            << merged);
  CHECK(submitted + merged >= io.writes);
  CHECK(submitted >= 1);
  CHECK(m.sum("cephscope_block_submit_seconds_count", {{"op", "write"}}) >= submitted);
  check_histogram_shape(m, "cephscope_block_target_submit_seconds",
                        {{"process", kTracked}, {"op", "write"}});
  const auto per_device = m.find("cephscope_block_bytes_total", {{"op", "write"}});
  REQUIRE_FALSE(per_device.empty());
  for (const auto& s : per_device) {
    CHECK(s.labels.at("device").find('/') == std::string::npos);  // "vda", not "/dev/vda"
  }
  // The test dir's own disks (derived from stat() and sysfs) carry the untracked twin's writes
  // as well as the driver's.
  INFO("the test dir is on " << Catch::Detail::stringify(disks));
  auto written_to = [&](const std::string& disk) {
    return m.sum("cephscope_block_bytes_total", {{"op", "write"}, {"device", disk}});
  };
  double on_disks = 0;
  for (const auto& disk : disks) {
    on_disks += written_to(disk);
  }
  CHECK(on_disks >= 2 * io.writes * io.size);
  const std::string busiest = *std::ranges::max_element(disks, {}, written_to);
  check_histogram_shape(m, "cephscope_block_device_seconds",
                        {{"op", "write"}, {"device", busiest}});

  // The untracked twin did the same IO and must not appear anywhere.
  CHECK_FALSE(m.any_with_label("process", "io_other"));
  CHECK(m.sum("cephscope_events_lost_total",
              {{"collector", "syscall"}, {"reason", "stats_full"}}) == 0);
  // A request misses its bio's record only where another bio took its slot, or where its bio
  // was queued before the programs were attached; a completion misses its request's record
  // where another request took the slot (counted then as inflight_full) or where the kernel
  // skipped the program that stores it (counted by the kernel as a miss, for classic
  // tracepoints since 6.7). Once the daemon is ready no other loss may be counted: flushes
  // and the journal's requests included, and neighbours inside one 4 KiB block (the guests'
  // ext4 has 1 KiB blocks) each keep their own slot.
  const Labels block_displaced = {{"collector", "block"}, {"reason", "inflight_full"}};
  const Labels block_programs = {{"collector", "block"}};
  auto since_ready = [&](const std::string& metric, const Labels& labels) {
    return m.sum(metric, labels) - ready.sum(metric, labels);
  };
  const double no_start = since_ready("cephscope_events_lost_total", block_no_start);
  const double displaced = since_ready("cephscope_events_lost_total", block_displaced);
  const double skipped = since_ready("cephscope_bpf_program_misses_total", block_programs);
  INFO("since ready: no_start " << no_start << ", requests displaced " << displaced
                                << ", block program runs the kernel skipped " << skipped);
  CHECK(no_start <= displaced + skipped);
}

TEST_CASE("a target's series disappear after the TTL once it exits", "[kernel][discovery]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  // The driver is the only target, even when Ceph runs on the host: its map entries are all.
  Daemon daemon(dir, tracking_config() + "  ceph_osd: false\n  rados_clients: false\n");
  REQUIRE(daemon.wait_ready());
  run_io(daemon, dir, IoPattern{4, 4096, 1, 1});
  const auto exited = std::chrono::steady_clock::now();
  // Still there within the TTL (3 s): an OSD restarted in time would continue its series.
  const Metrics within = daemon.scrape();
  CHECK(within.any_with_label("process", kTracked));
  // its syscalls were counted in its series group (bpf/op_latency.bpf.h), which it still owns
  CHECK(within.sum("cephscope_map_entries", {{"map", "syscall_series"}}) == 1);
  const bool gone = wait_for(
      daemon, [](const Metrics& m) { return !m.any_with_label("process", kTracked); },
      std::chrono::seconds(15));
  const double after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - exited).count();
  INFO("series went away " << after << " s after the exit");
  CHECK(gone);
  CHECK(after >= 2.5);
  // The daemon deletes the expired target's map entries and takes its group back itself;
  // scrapes only read.
  CHECK(wait_for(
      daemon,
      [](const Metrics& m) {
        return m.sum("cephscope_map_entries", {{"map", "syscall_stats"}}) == 0 &&
               m.sum("cephscope_map_entries", {{"map", "syscall_series"}}) == 0;
      },
      std::chrono::seconds(20)));
}

TEST_CASE("/metrics passes promtool check metrics", "[kernel][promtool]") {
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config());
  REQUIRE(daemon.wait_ready());
  run_io(daemon, dir, IoPattern{8, 4096, 1, 2});
  const std::string path = dir + "/metrics.txt";
  std::ofstream(path) << daemon.scrape_text();
  std::string out;
  const int rc = run_command("promtool check metrics < " + path, &out);
  INFO("promtool said:\n" << out);
  CHECK(rc == 0);
}
