// Submit stalls of a known size: null_blk with one tag and 10 ms per request (timer
// completion). Two synchronous O_DIRECT writers share that tag, so each bio waits for the
// other's request before it gets its own; one writer alone never waits. Needs the null_blk
// module: the kernel-matrix guests have it, this project's container hosts do not (then the
// case says so and checks nothing).
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kernel/io_workload.h"

using namespace cephscope::test;

namespace {

constexpr int kWrites = 20;
constexpr long kRequestNs = 10'000'000;  // null_blk's completion_nsec

// Synchronous 4 KiB O_DIRECT writes to DEVICE at OFFSET; false when one failed.
bool write_direct(const std::string& device, off_t offset, int count) {
  const int fd = ::open(device.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) != 0) {
    ::close(fd);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < count && ok; ++i) {
    ok = ::pwrite(fd, buf, 4096, offset) == 4096;
  }
  std::free(buf);
  ::close(fd);
  return ok;
}

struct NullBlk {
  bool loaded = false;
  explicit NullBlk(int devices = 1) {
    loaded = std::system(("modprobe null_blk nr_devices=" + std::to_string(devices) +
                          " queue_mode=2 hw_queue_depth=1 submit_queues=1 irqmode=2 "
                          "completion_nsec=10000000 gb=1 >/dev/null 2>&1")
                             .c_str()) == 0 &&
             ::access("/dev/nullb0", W_OK) == 0;
    // No I/O scheduler: a request then takes the driver's only tag when allocated (a
    // scheduler's own tags would move the wait to dispatch, after getrq: 5.10 defaults to
    // mq-deadline here).
    for (int i = 0; loaded && i < devices; ++i) {
      std::ofstream("/sys/block/nullb" + std::to_string(i) + "/queue/scheduler") << "none";
    }
  }
  ~NullBlk() {
    if (loaded) {
      (void)std::system("rmmod null_blk >/dev/null 2>&1");
    }
  }
  NullBlk(const NullBlk&) = delete;
  NullBlk& operator=(const NullBlk&) = delete;
};

// "program 123 ns/run (N runs)" for each of the block collector's programs that ran.
std::string run_times(const Metrics& m) {
  std::string out;
  for (const auto& runs : m.find("cephscope_bpf_program_runs_total", {{"collector", "block"}})) {
    const std::string& program = runs.labels.at("program");
    const double seconds = m.sum("cephscope_bpf_program_run_seconds_total",
                                 {{"collector", "block"}, {"program", program}});
    if (runs.value > 0) {
      char line[160];
      std::snprintf(line, sizeof line, " %s %.0f ns/run (%.0f runs);", program.c_str(),
                    seconds / runs.value * 1e9, runs.value);
      out += line;
    }
  }
  return out;
}

struct Submits {
  double count = 0;
  double sum = 0;
  double merges = 0;
};

Submits submits(Daemon& daemon) {
  const auto m = daemon.scrape();
  const std::map<std::string, std::string> dev{{"device", "nullb0"}, {"op", "write"}};
  return {m.sum("cephscope_block_submit_seconds_count", dev),
          m.sum("cephscope_block_submit_seconds_sum", dev),
          m.sum("cephscope_block_bio_merges_total", dev)};
}

}  // namespace

TEST_CASE("bios that wait for a request show as submit stalls of that size",
          "[kernel][block][stalls]") {
  NullBlk nullb;
  if (!nullb.loaded) {
    WARN(
        "null_blk cannot be loaded here: submit stalls of a known size are tested in the "
        "kernel-matrix guests");
    return;
  }
  const BpfStats stats;
  Daemon daemon(fresh_dir(), tracking_config());
  REQUIRE(daemon.wait_ready());

  // One writer: the tag is free whenever it submits.
  const Submits before = submits(daemon);
  REQUIRE(write_direct("/dev/nullb0", 0, kWrites));
  REQUIRE(wait_for(
      daemon, [&](const Metrics&) { return submits(daemon).count >= before.count + kWrites; },
      std::chrono::seconds(20)));
  const Submits alone = submits(daemon);
  const double alone_mean = (alone.sum - before.sum) / (alone.count - before.count);

  // Two writers: each bio waits for the other's request, up to 10 ms.
  bool other_ok = false;
  std::thread other([&] { other_ok = write_direct("/dev/nullb0", 1 << 20, kWrites); });
  const bool ok = write_direct("/dev/nullb0", 2 << 20, kWrites);
  other.join();
  REQUIRE(ok);
  REQUIRE(other_ok);
  REQUIRE(wait_for(
      daemon, [&](const Metrics&) { return submits(daemon).count >= alone.count + 2 * kWrites; },
      std::chrono::seconds(20)));
  const Submits both = submits(daemon);
  const double both_count = both.count - alone.count;
  const double both_mean = (both.sum - alone.sum) / both_count;
  std::printf(
      "null_blk (1 tag, 10 ms per request): submit stall mean alone %.1f us over %.0f "
      "bios, with a second writer %.2f ms over %.0f bios; merges %.0f\n",
      alone_mean * 1e6, alone.count - before.count, both_mean * 1e3, both_count, both.merges);
  std::printf("block programs' BPF run time:%s\n", run_times(daemon.scrape()).c_str());
  // Every bio got a request of its own (O_DIRECT, one at a time per writer: nothing to merge).
  CHECK(alone.count - before.count == kWrites);
  CHECK(both_count == 2 * kWrites);
  CHECK(both.merges == 0);
  // The sizes: alone, far below a request's 10 ms; shared, a good part of one.
  CHECK(alone_mean < 0.1 * kRequestNs * 1e-9);
  CHECK(both_mean > 0.2 * kRequestNs * 1e-9);
}

namespace {

// The schedulers of DEVICE's queue ("[mq-deadline] kyber none": the current one bracketed).
std::vector<std::string> schedulers(const std::string& device) {
  std::ifstream in("/sys/block/" + device + "/queue/scheduler");
  std::vector<std::string> out;
  for (std::string s; in >> s;) {
    out.push_back(s.front() == '[' ? s.substr(1, s.size() - 2) : s);
  }
  return out;
}

}  // namespace

TEST_CASE("queue freezes are timed and counted under the process that froze the queue",
          "[kernel][block][freezes]") {
  // Through fentry, and again through the kprobe fallback (kernels that refuse fentry).
  const std::string hook = GENERATE(as<std::string>(), "fentry", "kprobe");
  INFO("collectors.block.freeze_hook: " << hook);
  Daemon daemon(fresh_dir(),
                tracking_config("  block: {enabled: true, freeze_hook: " + hook + "}\n"));
  REQUIRE(daemon.wait_ready());
  const auto m = daemon.scrape();
  const auto status = m.find("cephscope_probe_attached",
                             {{"collector", "block"}, {"probe", "blk_freeze_queue_start"}});
  REQUIRE(status.size() == 1);
  if (status[0].value != 1) {
    // Where fentry is refused (or the functions are missing), the probes say why.
    CHECK(status[0].labels.at("reason") != "ok");
    CHECK(m.sum("cephscope_probe_attached",
                {{"collector", "block"}, {"probe", "blk_mq_unfreeze_queue"}}) == 0);
    CHECK(m.sum("cephscope_collector_up", {{"collector", "block"}}) == 1);  // the rest works
    WARN("queue freezes through " << hook << " unavailable here (" << status[0].labels.at("reason")
                                  << "): counted in the kernel-matrix guests");
    return;
  }
  CHECK(daemon.log_has("queue freezes through " + hook, std::chrono::seconds(1)));
  NullBlk nullb;
  REQUIRE(nullb.loaded);
  const auto scheds = schedulers("nullb0");
  const auto other =
      std::find_if(scheds.begin(), scheds.end(), [](const std::string& s) { return s != "none"; });
  REQUIRE(other != scheds.end());

  // What udev did in the incident: rewrite the scheduler in a loop, under IO.
  constexpr int kSwitches = 10;
  std::ofstream("/sys/block/nullb0/queue/scheduler") << "none";  // a known start
  // The freezes of the window: schedflip's own series, or "other" where 4 processes froze the
  // disk before it (module load, queue-limit updates: more of them on newer kernels).
  auto freezes = [](const Metrics& m, const std::string& process) {
    return m.sum("cephscope_block_queue_freezes_total", {{"process", process}});
  };
  const auto before = daemon.scrape();
  const double frozen_before = before.sum("cephscope_block_queue_frozen_seconds_count", {});
  const double flip_before = freezes(before, "schedflip");
  const double other_before = freezes(before, "other");
  const double submit_before =
      before.sum("cephscope_block_submit_seconds_count", {{"device", "nullb0"}, {"op", "write"}});
  const double merges_before =
      before.sum("cephscope_block_bio_merges_total", {{"device", "nullb0"}, {"op", "write"}});
  const double frozen_sum_before = before.sum("cephscope_block_queue_frozen_seconds_sum", {});
  const auto t0 = std::chrono::steady_clock::now();
  bool writer_ok = false;
  std::thread writer([&] { writer_ok = write_direct("/dev/nullb0", 0, 4 * kWrites); });
  std::thread flipper([&] {
    prctl(PR_SET_NAME, "schedflip");
    for (int i = 0; i < kSwitches; ++i) {
      std::ofstream("/sys/block/nullb0/queue/scheduler") << (i % 2 == 0 ? *other : "none");
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  });
  flipper.join();
  writer.join();
  const double window =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(writer_ok);
  REQUIRE(wait_for(
      daemon,
      [&](const Metrics& now) {
        return freezes(now, "schedflip") - flip_before + freezes(now, "other") - other_before >=
               kSwitches;
      },
      std::chrono::seconds(20)));
  const auto after = daemon.scrape();
  const double by_flip = freezes(after, "schedflip") - flip_before;
  const double by_other = freezes(after, "other") - other_before;
  const double frozen = after.sum("cephscope_block_queue_frozen_seconds_count", {}) - frozen_before;
  const double frozen_sum = after.sum("cephscope_block_queue_frozen_seconds_sum", {});
  std::string freezers;
  for (const auto& s : after.find("cephscope_block_queue_freezes_total")) {
    freezers += " " + s.labels.at("process") + "@" + s.labels.at("device") + "=" +
                std::to_string(static_cast<long>(s.value));
  }
  std::printf(
      "%d scheduler switches of nullb0 under IO: %.0f freezes under schedflip, %.0f under "
      "other (all:%s), %.0f timed, %.3f ms frozen in all; submit stalls %.0f bios\n",
      kSwitches, by_flip, by_other, freezers.c_str(), frozen, frozen_sum * 1e3,
      after.sum("cephscope_block_submit_seconds_count", {{"device", "nullb0"}}));
  CHECK(by_flip + by_other == kSwitches);  // one freeze per switch, under its own series or other
  CHECK((by_flip == kSwitches || by_other == kSwitches));  // never split between the two
  CHECK(frozen >= kSwitches);  // every freeze ends; other freezers may add theirs
  // Frozen time is real and bounded by the test's own clock: the switches ran one after
  // another inside the window.
  const double frozen_in_window = frozen_sum - frozen_sum_before;
  std::printf("frozen %.3f ms of a %.3f ms window\n", frozen_in_window * 1e3, window * 1e3);
  CHECK(frozen_in_window > 0);
  CHECK(frozen_in_window <= window);
  // Every bio of the writer got a request (a submit sample) or merged into one: none is lost
  // across the freezes.
  const double submits =
      after.sum("cephscope_block_submit_seconds_count", {{"device", "nullb0"}, {"op", "write"}}) -
      submit_before;
  const double merges =
      after.sum("cephscope_block_bio_merges_total", {{"device", "nullb0"}, {"op", "write"}}) -
      merges_before;
  CHECK(submits + merges == 4 * kWrites);
}

TEST_CASE("split bios and bios through a device-mapper target are measured on the disk",
          "[kernel][block][stack]") {
  NullBlk nullb;
  if (!nullb.loaded || std::system("command -v dmsetup >/dev/null && modprobe dm-mod") != 0) {
    WARN(
        "null_blk or device-mapper missing here: splits and stacks are tested in the "
        "kernel-matrix guests");
    return;
  }
  Daemon daemon(fresh_dir(), tracking_config());
  REQUIRE(daemon.wait_ready());
  auto count = [&](const std::string& device) {
    return daemon.scrape().sum("cephscope_block_submit_seconds_count",
                               {{"device", device}, {"op", "write"}});
  };

  // A 1 MiB write to a disk that takes 64 KiB per request: 16 bios after the splits, each
  // waits for its own request.
  std::ofstream("/sys/block/nullb0/queue/max_sectors_kb") << "64";
  const double before = count("nullb0");
  {
    const int fd = ::open("/dev/nullb0", O_WRONLY | O_DIRECT | O_CLOEXEC);
    REQUIRE(fd >= 0);
    void* buf = nullptr;
    REQUIRE(posix_memalign(&buf, 4096, 1 << 20) == 0);
    CHECK(::pwrite(fd, buf, 1 << 20, 0) == (1 << 20));
    std::free(buf);
    ::close(fd);
  }
  REQUIRE(wait_for(
      daemon, [&](const Metrics&) { return count("nullb0") >= before + 16; },
      std::chrono::seconds(20)));
  const double split = count("nullb0") - before;

  // A linear device-mapper target over the disk: its bios are remapped to nullb0's, which get
  // the requests and the samples; the dm device allocates none.
  // No udev in the guests: dmsetup mknodes makes the /dev/mapper node itself.
  REQUIRE(std::system("dmsetup create cephscope-linear --table "
                      "\"0 $(blockdev --getsz /dev/nullb0) linear /dev/nullb0 0\" && "
                      "dmsetup mknodes cephscope-linear") == 0);
  struct Remove {
    ~Remove() { (void)std::system("dmsetup remove cephscope-linear >/dev/null 2>&1"); }
  } remove;
  const double below = count("nullb0");
  REQUIRE(write_direct("/dev/mapper/cephscope-linear", 4 << 20, kWrites));
  REQUIRE(wait_for(
      daemon, [&](const Metrics&) { return count("nullb0") >= below + kWrites; },
      std::chrono::seconds(20)));
  const auto m = daemon.scrape();
  double on_dm = 0;
  for (const auto& s : m.find("cephscope_block_submit_seconds_count")) {
    if (s.labels.at("device").starts_with("dm-")) {
      on_dm += s.value;
    }
  }
  std::printf(
      "1 MiB write with max_sectors_kb 64: %.0f submit samples on nullb0; %d writes "
      "through dm-linear: %.0f samples on nullb0, %.0f on the dm device\n",
      split, kWrites, count("nullb0") - below, on_dm);
  CHECK(split == 16);
  CHECK(count("nullb0") - below == kWrites);
  CHECK(on_dm == 0);
}

TEST_CASE("bios through an md raid0 array are split at chunks and measured on its members",
          "[kernel][block][stack]") {
  NullBlk nullb(2);
  if (!nullb.loaded ||
      std::system("command -v mdadm >/dev/null && modprobe raid0 >/dev/null 2>&1") != 0) {
    WARN(
        "null_blk, mdadm or md raid0 missing here: md stacks are tested in the kernel-matrix "
        "guests");
    return;
  }
  Daemon daemon(fresh_dir(), tracking_config());
  REQUIRE(daemon.wait_ready());
  // A legacy array (no superblock: null_blk keeps no data, and no metadata IO muddies the
  // counts), 64 KiB chunks: nullb0 holds [0, 64K), nullb1 [64K, 128K), and so on.
  REQUIRE(std::system("mdadm --build /dev/md0 --level=0 --raid-devices=2 --chunk=64 "
                      "/dev/nullb0 /dev/nullb1 </dev/null >/dev/null 2>&1") == 0);
  struct Stop {
    ~Stop() { (void)std::system("mdadm --stop /dev/md0 >/dev/null 2>&1"); }
  } stop;
  auto count = [](const Metrics& m, const std::string& device) {
    return m.sum("cephscope_block_submit_seconds_count", {{"device", device}, {"op", "write"}});
  };
  const auto before = daemon.scrape();
  // 64 KiB writes at 32 KiB cross a chunk boundary: md splits each into two bios, remapped
  // to 32 KiB on nullb0 and 32 KiB on nullb1; each gets a request there, md0 none.
  const int fd = ::open("/dev/md0", O_WRONLY | O_DIRECT | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* buf = nullptr;
  REQUIRE(posix_memalign(&buf, 4096, 64 << 10) == 0);
  int written = 0;
  for (int i = 0; i < kWrites; ++i) {
    written += ::pwrite(fd, buf, 64 << 10, 32 << 10) == (64 << 10) ? 1 : 0;
  }
  std::free(buf);
  ::close(fd);
  REQUIRE(written == kWrites);
  (void)wait_for(
      daemon,
      [&](const Metrics& m) {
        return count(m, "nullb0") >= count(before, "nullb0") + kWrites &&
               count(m, "nullb1") >= count(before, "nullb1") + kWrites;
      },
      std::chrono::seconds(20));
  const auto after = daemon.scrape();
  const double on0 = count(after, "nullb0") - count(before, "nullb0");
  const double on1 = count(after, "nullb1") - count(before, "nullb1");
  const double on_md = count(after, "md0");
  std::string merges;
  for (const auto& s : after.find("cephscope_block_bio_merges_total")) {
    merges += " " + s.labels.at("device") + "=" + std::to_string(static_cast<long>(s.value));
  }
  std::printf(
      "%d 64 KiB writes across a chunk boundary of md raid0: %.0f submit samples on nullb0, "
      "%.0f on nullb1, %.0f on md0 (merges:%s)\n",
      kWrites, on0, on1, on_md, merges.c_str());
  CHECK(on0 == kWrites);
  CHECK(on1 == kWrites);
  CHECK(on_md == 0);
}
