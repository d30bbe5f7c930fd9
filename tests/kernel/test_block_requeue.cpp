// Requeued requests: scsi_debug answers every third command "host busy", so blk-mq puts the
// request back (block_rq_requeue) and issues it again later. Each request must still count
// once, under the process that wrote it, with none of its starts lost. Needs the scsi_debug
// module: the kernel-matrix guests have it, this project's container hosts do not (then the
// case says so and checks nothing).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "kernel/io_workload.h"

using namespace cephscope::test;
using Labels = std::map<std::string, std::string>;

namespace {

constexpr long kWrites = 64;
constexpr long kSize = 4096;
const std::string kOptions = "/sys/bus/pseudo/drivers/scsi_debug/";

// A scsi_debug disk for the test's life; `name` is empty where the module cannot be loaded.
struct ScsiDebug {
  std::string name;
  ScsiDebug() {
    // sd_mod makes the disk a block device: scsi_debug does not pull it in.
    if (std::system("modprobe sd_mod && modprobe scsi_debug dev_size_mb=16 >/dev/null 2>&1") != 0) {
      return;
    }
    for (int i = 0; i < 100 && name.empty(); ++i) {
      for (const auto& disk : std::filesystem::directory_iterator("/sys/block")) {
        std::string model;
        std::ifstream(disk.path() / "device/model") >> model;
        if (model == "scsi_debug" &&
            ::access(("/dev/" + disk.path().filename().string()).c_str(), W_OK) == 0) {
          name = disk.path().filename();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // A scheduler: with classic tracepoints a request's queue time starts at its insert.
    if (!name.empty()) {
      std::ofstream("/sys/block/" + name + "/queue/scheduler") << "mq-deadline";
    }
  }
  ~ScsiDebug() { (void)std::system("rmmod scsi_debug >/dev/null 2>&1"); }
  ScsiDebug(const ScsiDebug&) = delete;
  ScsiDebug& operator=(const ScsiDebug&) = delete;

  // Every `nth` command answered SCSI_MLQUEUE_HOST_BUSY (opts 0x8000), or none (0).
  static void busy_every(int nth) {
    std::ofstream(kOptions + "opts") << (nth != 0 ? "0x8000" : "0") << std::flush;
    std::ofstream(kOptions + "every_nth") << nth << std::flush;
  }
};

}  // namespace

TEST_CASE("a requeued request counts once under the process that wrote it",
          "[kernel][block][requeue]") {
  const ScsiDebug disk;
  if (disk.name.empty()) {
    WARN("scsi_debug cannot be loaded here: requeues are tested in the kernel-matrix guests");
    return;
  }
  const std::string hook = GENERATE(as<std::string>(), "tp_btf", "tracepoint");
  INFO("block hook " << hook << ", disk " << disk.name);
  const BpfStats stats;  // the requeue program's runs show that the disk did requeue
  const std::string dir = fresh_dir();
  Daemon daemon(dir, tracking_config("  block: {hook: " + hook + ", target_histograms: true}\n"));
  REQUIRE(daemon.wait_ready());
  INFO("daemon log:\n" << daemon.log());
  const Labels no_start = {{"collector", "block"}, {"reason", "no_start"}};
  const Metrics before = daemon.scrape();

  const std::string go = dir + "/go";
  Subprocess writer({CEPHSCOPE_IO_DRIVER, "/dev/" + disk.name, go, std::to_string(kWrites),
                     std::to_string(kSize), "0", "0"},
                    dir + "/io_driver.log");
  REQUIRE(wait_target(daemon, "io_driver", writer.pid()));
  ScsiDebug::busy_every(3);
  std::ofstream(go).put('\n');
  const std::optional<int> status = writer.wait(std::chrono::seconds(60));
  ScsiDebug::busy_every(0);
  REQUIRE(status == 0);  // exited, and cleanly

  const Labels mine = {{"process", "io_driver"}, {"device", disk.name}, {"op", "write"}};
  const Labels device = {{"device", disk.name}, {"op", "write"}};
  REQUIRE(wait_for(
      daemon,
      [&](const Metrics& m) {
        return m.sum("cephscope_block_target_device_seconds_count", mine) >= kWrites;
      },
      std::chrono::seconds(20)));
  const Metrics m = daemon.scrape();
  // The disk did requeue: the requeue program ran.
  double requeues = 0;
  for (const auto& runs : m.find("cephscope_bpf_program_runs_total", {{"collector", "block"}})) {
    if (runs.labels.at("program").ends_with("rq_requeue")) {
      requeues += runs.value;
    }
  }
  std::printf("scsi_debug (host busy on every third command), %s: %.0f requeues for %ld writes\n",
              hook.c_str(), requeues, kWrites);
  CHECK(requeues > 0);
  // Each write once, under its writer: its bytes, its device time, its queue time.
  CHECK(m.sum("cephscope_block_target_bytes_total", mine) == kWrites * kSize);
  CHECK(m.sum("cephscope_block_target_device_seconds_count", mine) == kWrites);
  CHECK(m.sum("cephscope_block_bytes_total", device) -
            before.sum("cephscope_block_bytes_total", device) ==
        kWrites * kSize);
  CHECK(m.sum("cephscope_block_device_seconds_count", device) -
            before.sum("cephscope_block_device_seconds_count", device) ==
        kWrites);
  CHECK(m.sum("cephscope_block_queue_seconds_count", device) -
            before.sum("cephscope_block_queue_seconds_count", device) ==
        kWrites);
  CHECK(m.sum("cephscope_events_lost_total", no_start) ==
        before.sum("cephscope_events_lost_total", no_start));
}
