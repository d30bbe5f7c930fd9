// The vfs collector against what the running kernel offers, found out first by the test's own
// fentry and kprobe programs (vfs_hook_probe.h), never presumed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <set>
#include <sstream>

#include "core/reason.h"
#include "kernel/io_workload.h"
#include "kernel/vfs_hook_probe.h"

using namespace cephscope::test;

namespace {

const std::string kTracked = "io_driver";

// The working hooks as "fentry,kprobe" (in the probe's order; "" for none).
std::string joined(const std::vector<VfsHookProbe>& probes) {
  std::string out;
  for (const auto& p : probes) {
    if (p.works) {
      out += (out.empty() ? "" : ",") + p.hook;
    }
  }
  return out;
}

// Optional cross-checks, for a harness that knows what a kernel should offer
// (tests/vm/kernels.conf): $CEPHSCOPE_EXPECT_VFS_HOOKS, the hooks that must work
// ("fentry,kprobe", "" for none), and $CEPHSCOPE_VFS_FSYNC, "seen" or "inlined" (fdatasync(2)
// does not call vfs_fsync_range). Unset, the probe alone decides.
void cross_check(const std::vector<VfsHookProbe>& probes) {
  if (const char* env = std::getenv("CEPHSCOPE_EXPECT_VFS_HOOKS")) {
    std::set<std::string> expected;
    std::stringstream in(env);
    for (std::string hook; std::getline(in, hook, ',');) {
      if (!hook.empty()) {
        expected.insert(hook);
      }
    }
    std::set<std::string> probed;
    for (const auto& p : probes) {
      if (p.works) {
        probed.insert(p.hook);
      }
    }
    INFO("CEPHSCOPE_EXPECT_VFS_HOOKS=\"" << env << "\", probed \"" << joined(probes) << "\"");
    CHECK(probed == expected);
  }
  if (const char* env = std::getenv("CEPHSCOPE_VFS_FSYNC")) {
    for (const auto& p : probes) {
      if (p.works) {
        INFO("CEPHSCOPE_VFS_FSYNC=" << env << ", probed with " << p.hook);
        CHECK(std::string(env) == (p.fdatasync_seen ? "seen" : "inlined"));
      }
    }
  }
}

}  // namespace

TEST_CASE("the vfs collector takes the first hook that works here, or says there is none",
          "[kernel][vfs]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  // What the kernel offers, probed here with programs of the test's own (vfs_hook_probe.h).
  const auto probes = probe_vfs_hooks(dir);
  std::string facts;
  for (const auto& p : probes) {
    facts += p.hook + ": " + (p.works ? "works" : p.reason) + "\n";
  }
  INFO("probed:\n" << facts);
  cross_check(probes);
  std::vector<VfsHookProbe> working;
  std::ranges::copy_if(probes, std::back_inserter(working), &VfsHookProbe::works);
  if (working.empty()) {
    Daemon daemon(dir, tracking_config());
    REQUIRE(daemon.wait_ready());
    const Metrics m = daemon.scrape();
    CHECK(m.sum("cephscope_collector_up", {{"collector", "vfs"}, {"hook", "unavailable"}}) == 0);
    CHECK(m.find("cephscope_collector_up", {{"collector", "vfs"}}).size() == 1);
    const auto attached = m.find("cephscope_probe_attached", {{"collector", "vfs"}});
    REQUIRE(attached.size() == 5);
    for (const auto& p : attached) {
      CHECK(p.value == 0);
      CHECK(cephscope::reason_from_word(p.labels.at("reason")).has_value());
      CHECK(p.labels.at("reason") != "ok");
    }
    // The label is one word; the log has both hooks' details.
    const std::string log = daemon.log();
    INFO(log);
    CHECK(log.find("collector vfs is unavailable") != std::string::npos);
    CHECK(log.find("fentry: ") != std::string::npos);
    CHECK(log.find("kprobe: ") != std::string::npos);
    // The rest of the daemon runs on.
    CHECK(m.sum("cephscope_collector_up", {{"collector", "syscall"}}) == 1);
    return;
  }
  // `hook: auto` must take the first hook that works; every other one that works is forced.
  for (std::size_t i = 0; i < working.size(); ++i) {
    const VfsHookProbe& hook = working[i];
    SECTION(i == 0 ? "hook: auto takes " + hook.hook : "hook: " + hook.hook) {
      Daemon daemon(dir, tracking_config(i == 0 ? "" : "  vfs: {hook: " + hook.hook + "}\n"));
      REQUIRE(daemon.wait_ready());
      const IoPattern io;
      run_io(daemon, dir, io);
      const Metrics m = daemon.scrape();
      INFO("daemon log:\n" << daemon.log());
      CHECK(m.sum("cephscope_collector_up", {{"collector", "vfs"}, {"hook", hook.hook}}) == 1);
      auto vfs = [&](const std::string& metric, const std::string& op) {
        return m.sum(metric, {{"process", kTracked}, {"op", op}});
      };
      CHECK(vfs("cephscope_vfs_seconds_count", "write") == io.writes);
      CHECK(vfs("cephscope_vfs_bytes_total", "write") == io.writes * io.size);
      CHECK(vfs("cephscope_vfs_seconds_count", "read") == io.reads);
      CHECK(vfs("cephscope_vfs_bytes_total", "read") == io.reads * io.size);
      // Where the kernel build inlines vfs_fsync_range into the fdatasync syscall (Debian's
      // 5.10 and 6.1: tests/vm/kernels.conf), no vfs probe sees io_driver's fdatasync(2).
      CHECK(vfs("cephscope_vfs_seconds_count", "fsync") == (hook.fdatasync_seen ? io.syncs : 0));
      CHECK_FALSE(m.any_with_label("process", "io_other"));
    }
  }
}
