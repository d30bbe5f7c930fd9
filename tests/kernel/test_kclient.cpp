// The kclient collector against the kernel's own Ceph client. Everywhere: before libceph is
// loaded the collector says so (module_not_loaded) and runs on. Where a cluster is at hand
// (CEPHSCOPE_KCLIENT_CEPH=1: the kernel-matrix guests start one, tests/vm/guest/ceph-cluster.sh)
// it loads rbd and ceph, the probes follow, and known IO is counted exactly: N O_DIRECT 4 KiB
// writes to a mapped rbd device are N OSD write requests of 4 KiB on that device, M file
// creates on a CephFS mount are M MDS create requests, a tracked process's O_DIRECT writes on
// CephFS are its own, and reads of never-written blocks (rbd) and of a hole (CephFS) are
// not_found errors with no bytes. With CEPHSCOPE_KCLIENT_PROMETHEUS (the guests, when the
// harness runs Prometheus on the host: tests/prometheus/kclient-in-the-loop.py) the daemon
// listens where the host's forwarded port reaches it, and the test hands what it drove over.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "io_workload.h"
#include "support/daemon_runner.h"
#include "support/subprocess.h"

using namespace cephscope::test;

namespace {

using Clock = std::chrono::steady_clock;

bool cluster_at_hand() {
  const char* v = std::getenv("CEPHSCOPE_KCLIENT_CEPH");
  return v != nullptr && std::string(v) == "1";
}

double probe_attached(const Metrics& m, const std::string& probe, const std::string& reason) {
  return m.find("cephscope_probe_attached",
                {{"collector", "kclient"}, {"probe", probe}, {"reason", reason}})
                 .empty()
             ? -1
             : m.sum("cephscope_probe_attached",
                     {{"collector", "kclient"}, {"probe", probe}, {"reason", reason}});
}

std::string run(const std::string& command) {
  std::string out;
  const int rc = run_command(command + " 2>&1", &out);
  INFO(command << ":\n" << out);
  REQUIRE(rc == 0);
  while (!out.empty() && out.back() == '\n') {
    out.pop_back();
  }
  return out;
}

// The kclient collector's probes: libceph's, rbd's and ceph.ko's (the MDS client).
constexpr std::array<const char*, 5> kProbes = {"ceph_osdc_start_request", "__complete_request",
                                                "rbd_osd_submit", "ceph_mdsc_submit_request",
                                                "ceph_mdsc_release_request"};

// The hook the collector settled on once libceph is loaded, or "" on timeout.
std::string wait_loaded(Daemon& daemon) {
  std::string hook;
  wait_for(
      daemon,
      [&](const Metrics& m) {
        for (const char* h : {"fentry", "kprobe"}) {
          if (m.sum("cephscope_collector_up", {{"collector", "kclient"}, {"hook", h}}) == 1) {
            hook = h;
            return true;
          }
        }
        return probe_attached(m, "__complete_request", "kernel_feature_missing") == 0;
      },
      std::chrono::seconds(30));
  return hook;
}

struct Requests {
  double count = 0;
  double sum = 0;
  double bytes = 0;
};

Requests osd_requests(const Metrics& m, const std::map<std::string, std::string>& who) {
  return {m.sum("cephscope_kclient_osd_request_seconds_count", who),
          m.sum("cephscope_kclient_osd_request_seconds_sum", who),
          m.sum("cephscope_kclient_osd_request_bytes_total", who)};
}

// MDS create requests (after minus before) in the smallest bucket whose bound is at least
// `seconds`: all of them when none took longer.
double creates_within(const Metrics& before, const Metrics& after, double seconds) {
  double bound = 0;
  for (const auto& b :
       after.find("cephscope_kclient_mds_request_seconds_bucket", {{"op", "create"}})) {
    const double le = std::stod(b.labels.at("le"));
    if (le >= seconds && (bound == 0 || le < bound)) {
      bound = le;
    }
  }
  REQUIRE(bound > 0);
  const auto in_bucket = [&](const Metrics& m) {
    double n = 0;
    for (const auto& b :
         m.find("cephscope_kclient_mds_request_seconds_bucket", {{"op", "create"}})) {
      if (std::stod(b.labels.at("le")) == bound) {
        n += b.value;
      }
    }
    return n;
  };
  return in_bucket(after) - in_bucket(before);
}

// `count` O_DIRECT writes (or reads) of 4 KiB at `offset` in `path`, 256 KiB apart: one OSD
// request each.
void direct_io(const std::string& path, int count, bool write, off_t offset = 0) {
  const int fd = open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_DIRECT | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* buf = nullptr;
  REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
  std::memset(buf, 0x5a, 4096);
  for (int i = 0; i < count; ++i) {
    const off_t at = offset + static_cast<off_t>(i) * 262144;
    REQUIRE((write ? pwrite(fd, buf, 4096, at) : pread(fd, buf, 4096, at)) == 4096);
  }
  std::free(buf);
  close(fd);
}
void write_direct(const std::string& dev, int count) {
  direct_io(dev, count, true);
}

// Reads of what was never written: not_found errors (after minus before) and read bytes.
std::pair<double, double> hole_reads(const Metrics& before, const Metrics& after,
                                     std::map<std::string, std::string> who) {
  who["op"] = "read";
  const double bytes = after.sum("cephscope_kclient_osd_request_bytes_total", who) -
                       before.sum("cephscope_kclient_osd_request_bytes_total", who);
  who["class"] = "not_found";
  return {after.sum("cephscope_kclient_osd_request_errors_total", who) -
              before.sum("cephscope_kclient_osd_request_errors_total", who),
          bytes};
}

// The folder the host's Prometheus checker shares with the test, or "".
std::string prometheus_dir() {
  const char* v = std::getenv("CEPHSCOPE_KCLIENT_PROMETHEUS");
  return v != nullptr ? v : "";
}

// Writes `name` (JSON) in the folder shared with the host's checker and waits, bounded, until
// its Prometheus has scraped the daemon after this point: the checker answers `name.scraped`.
bool hand_off(const std::string& dir, const std::string& name, const std::string& json) {
  const std::filesystem::path path = std::filesystem::path(dir) / name;
  std::filesystem::path tmp = path;
  std::filesystem::path answer = path;
  tmp += ".tmp";
  answer += ".scraped";
  std::ofstream(tmp) << json << "\n";
  std::filesystem::rename(tmp, path);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    if (std::filesystem::exists(answer)) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// Figures, not assertions: each program's runs per request and BPF run time per run over
// `requests` rbd writes (bpf_stats, which the test turned on). Under qemu's emulation the run
// times are many times a real CPU's; the runs per request are the steady figure.
void print_program_costs(const Metrics& before, const Metrics& after, int requests,
                         const std::string& hook) {
  for (const char* fn : {"rbd_osd_submit", "ceph_osdc_start_request", "__complete_request"}) {
    const std::map<std::string, std::string> prog = {{"collector", "kclient"},
                                                     {"program", hook + "_" + fn}};
    const double runs = after.sum("cephscope_bpf_program_runs_total", prog) -
                        before.sum("cephscope_bpf_program_runs_total", prog);
    const double secs = after.sum("cephscope_bpf_program_run_seconds_total", prog) -
                        before.sum("cephscope_bpf_program_run_seconds_total", prog);
    std::printf("kclient: %s: %.2f runs per request, %.0f ns per run\n", fn, runs / requests,
                runs > 0 ? secs / runs * 1e9 : 0.0);
  }
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

TEST_CASE("kclient: krbd and CephFS requests are counted exactly, or the collector says why not",
          "[kernel][kclient]") {
  const bool preloaded = std::filesystem::exists("/sys/module/libceph");
  if (preloaded && !cluster_at_hand()) {
    WARN("libceph is loaded on this host and no test cluster is named: nothing to prove here");
    return;
  }
  const std::string dir = fresh_dir();
  const std::string prometheus = prometheus_dir();
  const auto started = Clock::now();
  Daemon daemon(dir,
                tracking_config("  syscall: {enabled: false}\n  block: {enabled: false}\n"
                                "  vfs: {enabled: false}\n  rados: {enabled: false}\n"),
                {}, prometheus.empty() ? "" : "0.0.0.0:9488");
  DaemonLogOnFailure show_log(daemon);
  REQUIRE(daemon.wait_ready());

  // Before libceph: unavailable, and why
  const Metrics before = daemon.scrape();
  CHECK(before.sum("cephscope_collector_up", {{"collector", "kclient"}, {"hook", "unavailable"}}) ==
        0);
  for (const char* probe : kProbes) {
    INFO(probe);
    CHECK(probe_attached(before, probe, "module_not_loaded") == 0);
  }
  if (!cluster_at_hand()) {
    return;  // the host: no cluster for the kernel client to reach
  }

  // The programs' run counts and time, for the figures printed below
  std::ofstream("/proc/sys/kernel/bpf_stats_enabled") << 1;
  // The modules appear: the probes follow
  run("modprobe rbd && modprobe ceph");
  const std::string hook = wait_loaded(daemon);
  if (!hook.empty()) {
    // The collector comes up with libceph; ceph.ko (the MDS probes) may load a moment after
    // and its probes follow at its own load event: wait for every probe's status to say so.
    wait_for(
        daemon,
        [](const Metrics& m) {
          return std::ranges::all_of(
              kProbes, [&](const char* probe) { return probe_attached(m, probe, "ok") == 1; });
        },
        std::chrono::seconds(30));
  }
  const Metrics loaded = daemon.scrape();
  if (hook.empty()) {
    // a kernel without module BTF (Debian's 5.10): the layout of libceph's requests is unknown
    INFO(daemon.log());
    CHECK(probe_attached(loaded, "__complete_request", "kernel_feature_missing") == 0);
    REQUIRE_FALSE(std::filesystem::exists("/sys/kernel/btf/libceph"));
    WARN("kclient: libceph has no BTF on this kernel: the collector reports it unavailable");
    if (!prometheus.empty()) {
      hand_off(prometheus, "facts.json", R"({"kclient": "unavailable"})");
    }
    return;
  }
  std::printf("kclient: hook %s after libceph loaded\n", hook.c_str());
  for (const char* probe : kProbes) {
    INFO(probe);
    CHECK(probe_attached(loaded, probe, "ok") == 1);
  }

  // what the test drove, for the host's Prometheus checker
  std::string rbd_device;
  constexpr int kWrites = 64;
  constexpr int kKprobeWrites = 16;
  constexpr int kHoleReads = 8;
  {  // N O_DIRECT 4 KiB writes to a mapped rbd device: N OSD write requests on that device
    const std::string image = "rbd/kclient-" + std::to_string(getpid());
    run("rbd create " + image + " --size 64M --image-feature layering");
    const std::string dev = run("rbd map -o noudev " + image);
    REQUIRE(dev.rfind("/dev/rbd", 0) == 0);
    const std::string device = dev.substr(5);  // rbd0
    rbd_device = device;
    const std::map<std::string, std::string> who = {{"device", device}, {"op", "write"}};
    const Metrics before_writes = daemon.scrape();
    const Requests start = osd_requests(before_writes, who);
    const auto t0 = Clock::now();
    write_direct(dev, kWrites);
    const double elapsed = seconds_since(t0);
    const Metrics m = daemon.scrape();
    print_program_costs(before_writes, m, kWrites, hook);
    const Requests end = osd_requests(m, who);
    const double n = end.count - start.count;
    std::printf(
        "kclient: %d rbd writes -> %.0f OSD write requests on %s, %.0f bytes, mean %.2f ms "
        "(the test's own: %.2f ms per write)\n",
        kWrites, n, device.c_str(), end.bytes - start.bytes,
        n > 0 ? (end.sum - start.sum) / n * 1e3 : 0.0, elapsed / kWrites * 1e3);
    CHECK(n == kWrites);
    CHECK(end.bytes - start.bytes == kWrites * 4096.0);
    CHECK(end.sum - start.sum > 0);
    CHECK(end.sum - start.sum <= elapsed);  // every request within the test's own time
    const auto info = m.find("cephscope_kclient_rbd_device_info", {{"device", device}});
    REQUIRE(info.size() == 1);
    CHECK(info.front().labels.at("image") == image.substr(4));
    CHECK(info.front().labels.at("pool") == "rbd");
    // the device's requests join its info on `client`
    const auto requests = m.find("cephscope_kclient_osd_request_seconds_count",
                                 {{"device", device}, {"op", "write"}});
    REQUIRE(requests.size() == 1);
    CHECK(requests.front().labels.at("client") == info.front().labels.at("client"));
    CHECK(m.sum("cephscope_events_lost_total", {{"collector", "kclient"}}) == 0);

    // the fallback: kprobes on the same functions, in a second daemon, count the same
    std::filesystem::create_directories(dir + "/kprobe");
    Daemon kprobes(dir + "/kprobe", tracking_config("  syscall: {enabled: false}\n"
                                                    "  block: {enabled: false}\n"
                                                    "  vfs: {enabled: false}\n"
                                                    "  rados: {enabled: false}\n"
                                                    "  kclient: {hook: kprobe}\n"));
    DaemonLogOnFailure show_kprobe_log(kprobes);
    REQUIRE(kprobes.wait_ready());
    REQUIRE(wait_loaded(kprobes) == "kprobe");
    const Requests k0 = osd_requests(kprobes.scrape(), who);
    write_direct(dev, kKprobeWrites);
    const Requests k1 = osd_requests(kprobes.scrape(), who);
    std::printf("kclient: kprobes: %d rbd writes -> %.0f OSD write requests, %.0f bytes\n",
                kKprobeWrites, k1.count - k0.count, k1.bytes - k0.bytes);
    CHECK(k1.count - k0.count == kKprobeWrites);
    CHECK(k1.bytes - k0.bytes == kKprobeWrites * 4096.0);
    CHECK(kprobes.stop() == 0);

    // reads of an object never written: the OSD answers ENOENT and krbd reads zeros
    const Metrics h0 = daemon.scrape();
    direct_io(dev, kHoleReads, false, 32 << 20);
    const auto [holes, hole_bytes] = hole_reads(h0, daemon.scrape(), {{"device", device}});
    std::printf("kclient: %d reads of unwritten rbd blocks -> %.0f not_found errors\n", kHoleReads,
                holes);
    CHECK(holes == kHoleReads);
    CHECK(hole_bytes == 0);
    run("rbd unmap -o noudev " + dev);
    run("rbd rm --no-progress " + image);
  }

  {  // M creates on a CephFS mount: M MDS create requests; a tracked writer's requests are its own
    const std::string mnt = dir + "/cephfs";
    std::filesystem::create_directories(mnt);
    run("mount -t ceph 127.0.0.1:6789:/ " + mnt + " -o name=admin");
    struct Unmount {
      std::string path;
      ~Unmount() { run_command("umount " + path); }
    } unmount{mnt};
    const std::string files = mnt + "/kclient-" + std::to_string(getpid());
    std::filesystem::create_directories(files);
    constexpr int kCreates = 50;
    const Metrics start = daemon.scrape();
    const auto t0 = Clock::now();
    for (int i = 0; i < kCreates; ++i) {
      const std::string path = files + "/f" + std::to_string(i);
      const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
      REQUIRE(fd >= 0);
      close(fd);
    }
    const double elapsed = seconds_since(t0);  // async creates return before the MDS replies
    const auto creates = [](const Metrics& s) {
      return std::pair{s.sum("cephscope_kclient_mds_request_seconds_count", {{"op", "create"}}),
                       s.sum("cephscope_kclient_mds_request_seconds_sum", {{"op", "create"}})};
    };
    const auto before = creates(start);
    const double c0 = before.first;
    const double s0 = before.second;
    // a request counts when the client releases it, after the MDS's safe reply (its journal)
    wait_for(
        daemon, [&](const Metrics& s) { return creates(s).first - c0 >= kCreates; },
        std::chrono::seconds(60));
    const Metrics m = daemon.scrape();
    const double observed = seconds_since(t0);  // every create's reply came before this
    const auto [c1, s1] = creates(m);
    std::printf(
        "kclient: %d creates -> %.0f MDS create requests, mean %.2f ms (the test's own: "
        "%.2f ms per create)\n",
        kCreates, c1 - c0, c1 > c0 ? (s1 - s0) / (c1 - c0) * 1e3 : 0.0, elapsed / kCreates * 1e3);
    CHECK(c1 - c0 == kCreates);
    CHECK(s1 - s0 > 0);
    // each within the test's own time: all in the first bucket at or above it
    CHECK(creates_within(start, m, observed) == c1 - c0);
    const auto mounts = m.find("cephscope_kclient_cephfs_mount_info", {{"mount_point", mnt}});
    REQUIRE(mounts.size() == 1);
    const std::string client = mounts.front().labels.at("client");
    CHECK(m.sum("cephscope_kclient_mds_request_seconds_count", {{"client", client}}) >= kCreates);

    // io_driver (tracked) and its untracked twin write the same with O_DIRECT: CephFS submits
    // the requests in the writer's context, so the tracked driver's are labelled with it
    IoPattern io;
    io.writes = 32;
    io.size = 16384;
    io.syncs = 1;
    io.reads = 8;
    const std::map<std::string, std::string> driver = {{"process", "io_driver"},
                                                       {"client", client}};
    const Metrics w0 = daemon.scrape();
    run_io(daemon, files, io);
    const Metrics w1 = daemon.scrape();
    auto delta = [&](const std::string& op) {
      auto who = driver;
      who["op"] = op;
      const Requests a = osd_requests(w0, who);
      const Requests b = osd_requests(w1, who);
      return Requests{b.count - a.count, b.sum - a.sum, b.bytes - a.bytes};
    };
    const Requests writes = delta("write");
    const Requests reads = delta("read");
    std::printf("kclient: io_driver on CephFS: %.0f OSD writes (%.0f bytes), %.0f reads\n",
                writes.count, writes.bytes, reads.count);
    CHECK(writes.count == io.writes);
    CHECK(writes.bytes == static_cast<double>(io.writes * io.size));
    CHECK(reads.count == io.reads);
    CHECK(reads.bytes == static_cast<double>(io.reads * io.size));

    // reads of a hole in a CephFS file: one not_found error per read (objects of 4 MiB)
    constexpr int kHoles = 3;
    const std::string sparse = files + "/sparse";
    std::ofstream(sparse).close();
    std::filesystem::resize_file(sparse, 16 << 20);
    const auto cephfs_holes = [&] {
      const Metrics s0 = daemon.scrape();
      for (int i = 1; i <= kHoles; ++i) {
        direct_io(sparse, 1, false, static_cast<off_t>(i) << 22);
      }
      return hole_reads(s0, daemon.scrape(), {{"client", client}});
    };
    const auto [holes, hole_bytes] = cephfs_holes();
    std::printf("kclient: %d reads of a CephFS hole -> %.0f not_found errors\n", kHoles, holes);
    CHECK(holes >= kHoles);
    CHECK(hole_bytes == 0);

    if (!prometheus.empty()) {
      // A second batch once the host's Prometheus has seen every series: each panel's rate
      // then sees it grow. Then what the test drove, for the checker.
      const auto t_prometheus = Clock::now();
      CHECK(hand_off(prometheus, "mark.json", "{}"));
      // counted from here: the creates of the io files and of `sparse` came after c0, and
      // would let the wait below end before these (async) creates are answered
      const double c_mark = creates(daemon.scrape()).first;
      constexpr int kMoreCreates = 5;
      for (int i = 0; i < kMoreCreates; ++i) {
        std::ofstream(files + "/g" + std::to_string(i));
      }
      direct_io(sparse, 4, true);
      cephfs_holes();
      wait_for(
          daemon, [&](const Metrics& s) { return creates(s).first - c_mark >= kMoreCreates; },
          std::chrono::seconds(60));
      char facts[1024];
      std::snprintf(facts, sizeof facts,
                    R"({"kclient": "ok", "device": "%s", "rbd_writes": %d, "rbd_write_bytes": %d, )"
                    R"("rbd_hole_reads": %d, "cephfs_client": "%s", "mds_creates": %d, )"
                    R"("cephfs_hole_reads": %d, "driver_writes": %d, "driver_write_bytes": %d, )"
                    R"("seconds": %.1f})",
                    rbd_device.c_str(), kWrites + kKprobeWrites, (kWrites + kKprobeWrites) * 4096,
                    kHoleReads, client.c_str(), kCreates + kMoreCreates, 2 * kHoles,
                    static_cast<int>(io.writes), static_cast<int>(io.writes * io.size),
                    seconds_since(started));
      CHECK(hand_off(prometheus, "facts.json", facts));
      std::printf(
          "kclient: the Prometheus phase took %.1f s (a scrape, a second batch, a scrape)\n",
          seconds_since(t_prometheus));
    }
    std::filesystem::remove_all(files);
  }
}
