// Targets that name hostile files, and targets that lie about who they are. A process named
// ceph-osd chooses its -c path and everything under its root: a FIFO (open() would block the
// daemon for good), a symlink out of its root into the host, a 10 GiB sparse file, a debug
// file that inflates to gigabytes. Another claims an osd.N that a live process holds. In each
// case the daemon keeps discovering, answers SIGHUP and SIGTERM at once, and says what it
// refused. The chrooted OSDs have their own root, as a container's do.
#include <fcntl.h>
#include <linux/auto_fs.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/unique_fd.h"
#include "profile/elf_file.h"
#include "support/daemon_runner.h"
#include "support/elf_bomb.h"
#include "support/subprocess.h"

using namespace cephscope::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* kInsideFsid = "11111111-2222-4333-8444-555555555555";
constexpr const char* kHostFsid = "99999999-8888-4777-8666-555555555555";

using Seconds = std::chrono::duration<double>;

constexpr const char* CHROOT = "/usr/sbin/chroot";

// The fsid label of osd.ID's cephscope_target_info for PID; "absent" when not tracked.
std::string tracked_fsid(Daemon& d, int id, pid_t pid) {
  for (const auto& s : d.scrape().find(
           "cephscope_target_info",
           {{"ceph_daemon", "osd." + std::to_string(id)}, {"pid", std::to_string(pid)}})) {
    const auto fsid = s.labels.find("fsid");  // an empty label is left out
    return fsid == s.labels.end() ? "" : fsid->second;
  }
  return "absent";
}

std::string copy_fake_osd(const std::string& dir, const char* build = CEPHSCOPE_FAKE_OSD) {
  std::string exe = dir + "/ceph-osd";
  fs::create_directories(dir);
  fs::copy_file(build, exe, fs::copy_options::overwrite_existing);
  return exe;
}

std::string quiet_config() {
  return "collectors:\n  osd: {enabled: false}\ndiscovery:\n  scan_interval: 1s\n";
}

bool log_has(const Daemon& d, const std::string& text, std::chrono::milliseconds timeout) {
  return eventually([&] { return d.log().find(text) != std::string::npos; }, timeout);
}

// A file system that stalls until the test answers: an autofs mount (indirect, protocol 5)
// whose automounter is this process. The kernel holds any process outside this one's process
// group that walks into it, as a hung NFS or FUSE mount holds a reader, until the automounter
// mounts what was asked for and says so; this process sees the directory as it is.
class StalledMount {
 public:
  explicit StalledMount(std::string dir) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    requests_.reset(p[0]);
    const cephscope::UniqueFd write_end(p[1]);  // the mount keeps its own reference
    const std::string options = "fd=" + std::to_string(p[1]) +
                                ",pgrp=" + std::to_string(getpgrp()) +
                                ",minproto=5,maxproto=5,indirect";
    REQUIRE(mount("cephscope-test", dir_.c_str(), "autofs", 0, options.c_str()) == 0);
    mounted_ = true;
    control_.reset(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(control_.valid());
  }
  StalledMount(const StalledMount&) = delete;
  StalledMount& operator=(const StalledMount&) = delete;
  StalledMount(StalledMount&&) = delete;
  StalledMount& operator=(StalledMount&&) = delete;
  ~StalledMount() {
    if (control_.valid()) {
      ioctl(control_.get(), AUTOFS_IOC_CATATONIC, 0);  // whoever still waits gets an error
    }
    for (const auto& key : answered_) {
      umount2((dir_ + "/" + key).c_str(), MNT_DETACH);
    }
    control_.reset(-1);
    if (mounted_) {
      umount2(dir_.c_str(), MNT_DETACH);
    }
  }

  struct Request {
    std::uint32_t token = 0;
    std::string key;
  };
  // The next lookup the kernel holds, or nullopt when none came within TIMEOUT.
  std::optional<Request> wait_request(std::chrono::milliseconds timeout) {
    pollfd pfd{requests_.get(), POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(timeout.count())) != 1) {
      return std::nullopt;
    }
    autofs_v5_packet packet{};
    if (read(requests_.get(), &packet, sizeof packet) != static_cast<ssize_t>(sizeof packet) ||
        packet.hdr.type != autofs_ptype_missing_indirect) {
      return std::nullopt;
    }
    return Request{packet.wait_queue_token, std::string(packet.name, packet.len)};
  }
  // Mounts a file system holding FILE with TEXT at the key asked for, and lets the lookup go on.
  void answer(const Request& request, const std::string& file, const std::string& text) {
    const std::string at = dir_ + "/" + request.key;
    REQUIRE(mkdir(at.c_str(), 0755) == 0);
    REQUIRE(mount("tmpfs", at.c_str(), "tmpfs", 0, "size=1m") == 0);
    answered_.push_back(request.key);
    std::ofstream(at + "/" + file) << text;
    REQUIRE(ioctl(control_.get(), AUTOFS_IOC_READY, request.token) == 0);
  }

 private:
  std::string dir_;
  bool mounted_ = false;
  cephscope::UniqueFd requests_;
  cephscope::UniqueFd control_;
  std::vector<std::string> answered_;
};

}  // namespace

TEST_CASE("an OSD naming a FIFO, a symlink into the host or a 10 GiB file stalls nothing",
          "[kernel][discovery][hostile][userspace]") {
  const std::string dir = test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
  const std::string root = dir + "/hostile-root";
  fs::remove_all(root);
  copy_fake_osd(root);  // static: it needs nothing else in its root
  // The host's file, and a file at the same path inside the root.
  const std::string host_conf = dir + "/host-ceph.conf";
  std::ofstream(host_conf) << "[global]\nfsid = " << kHostFsid << "\n";
  fs::create_directories(root + fs::path(host_conf).parent_path().string());
  std::ofstream(root + host_conf) << "[global]\nfsid = " << kInsideFsid << "\n";
  REQUIRE(mkfifo((root + "/conf.fifo").c_str(), 0600) == 0);
  fs::create_symlink(host_conf, root + "/conf.link");
  {
    const cephscope::UniqueFd big(open((root + "/big.conf").c_str(), O_CREAT | O_WRONLY, 0600));
    REQUIRE(big.valid());
    REQUIRE(ftruncate(big.get(), off_t{10} << 30) == 0);
  }

  Daemon daemon(dir, quiet_config());
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  auto chrooted = [&](int id, const std::string& conf) {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{CHROOT, root, "/ceph-osd", "-i", std::to_string(id), "-c", conf});
  };
  auto fifo = chrooted(71, "/conf.fifo");
  auto link = chrooted(72, "/conf.link");
  auto sparse = chrooted(73, "/big.conf");
  // chroot(8) execs the OSD in place: the pid is the OSD's.
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 71, fifo->pid()) != "absent"; }));
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 72, link->pid()) != "absent"; }));
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 73, sparse->pid()) != "absent"; }));
  std::printf("three hostile OSDs tracked within %.2f s\n",
              Seconds(std::chrono::steady_clock::now() - t0).count());
  CHECK(tracked_fsid(daemon, 71, fifo->pid()).empty());
  // The symlink resolves inside the OSD's root, as it does for the OSD: never the host's file.
  CHECK(tracked_fsid(daemon, 72, link->pid()) == kInsideFsid);
  CHECK(tracked_fsid(daemon, 73, sparse->pid()).empty());

  // Discovery goes on: a well-behaved OSD started afterwards is found.
  auto next = std::make_unique<Subprocess>(
      std::vector<std::string>{copy_fake_osd(dir + "/osd-74"), "-i", "74"});
  CHECK(eventually([&] { return tracked_fsid(daemon, 74, next->pid()) != "absent"; }));

  // The refusals are reported: log and metric.
  CHECK(log_has(daemon, "file refused (not_regular): /conf.fifo: a FIFO", std::chrono::seconds(2)));
  CHECK(log_has(daemon, "file refused (too_large): /big.conf: 10737418240 bytes",
                std::chrono::seconds(2)));
  const auto m = daemon.scrape();
  CHECK(m.sum("cephscope_discovery_refusals_total", {{"reason", "not_regular"}}) >= 1);
  CHECK(m.sum("cephscope_discovery_refusals_total", {{"reason", "too_large"}}) >= 1);

  // Signals are answered at once.
  auto t1 = std::chrono::steady_clock::now();
  REQUIRE(kill(daemon.pid(), SIGHUP) == 0);
  CHECK(log_has(daemon, "config reloaded", std::chrono::seconds(3)));
  std::printf("SIGHUP answered in %.3f s\n",
              Seconds(std::chrono::steady_clock::now() - t1).count());
  // SIGTERM is taken at once; detaching every probe then takes seconds on a busy machine.
  t1 = std::chrono::steady_clock::now();
  REQUIRE(kill(daemon.pid(), SIGTERM) == 0);
  CHECK(log_has(daemon, "signal 15: shutting down", std::chrono::seconds(2)));
  const double taken = Seconds(std::chrono::steady_clock::now() - t1).count();
  CHECK(daemon.stop() == std::optional<int>(0));
  std::printf("SIGTERM taken in %.3f s, exit after %.3f s\n", taken,
              Seconds(std::chrono::steady_clock::now() - t1).count());
  fs::remove(root + "/big.conf");
}

TEST_CASE("a second process claiming a live osd.N is reported and never merged",
          "[kernel][discovery][identity][userspace]") {
  const std::string dir = test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
  Daemon daemon(dir, quiet_config());
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  auto first = std::make_unique<Subprocess>(
      std::vector<std::string>{copy_fake_osd(dir + "/claim-a"), "-i", "81", "--fsid", kInsideFsid});
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 81, first->pid()) == kInsideFsid; }));
  auto second = std::make_unique<Subprocess>(
      std::vector<std::string>{copy_fake_osd(dir + "/claim-b"), "-i", "81", "--fsid", kInsideFsid});
  REQUIRE(eventually([&] {
    return daemon.scrape().sum("cephscope_osd_identity_conflict", {{"ceph_daemon", "osd.81"}}) == 1;
  }));
  CHECK(log_has(daemon,
                "identity conflict: pid " + std::to_string(second->pid()) + " (" + dir +
                    "/claim-b/ceph-osd, fsid " + kInsideFsid + ") claims osd.81, held by pid " +
                    std::to_string(first->pid()) + " (fsid " + kInsideFsid + ")",
                std::chrono::seconds(2)));
  const auto m = daemon.scrape();
  const auto infos = m.find("cephscope_target_info", {{"ceph_daemon", "osd.81"}});
  REQUIRE(infos.size() == 1);  // one series, the first claimant's, its fsid kept
  CHECK(infos[0].labels.at("pid") == std::to_string(first->pid()));
  CHECK(infos[0].labels.at("fsid") == kInsideFsid);

  // Another cluster's osd.81 is a target of its own: series apart, no conflict.
  auto other = std::make_unique<Subprocess>(
      std::vector<std::string>{copy_fake_osd(dir + "/claim-c"), "-i", "81", "--fsid", kHostFsid});
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 81, other->pid()) == kHostFsid; }));
  CHECK(daemon.scrape().sum("cephscope_osd_identity_conflict", {{"ceph_daemon", "osd.81"}}) == 1);
  CHECK(daemon.scrape().find("cephscope_target_info", {{"ceph_daemon", "osd.81"}}).size() == 2);
  other.reset();

  // The claimant gone, the conflict is over (the next scan sees it).
  second.reset();
  CHECK(eventually([&] {
    return daemon.scrape().sum("cephscope_osd_identity_conflict", {{"ceph_daemon", "osd.81"}}) == 0;
  }));
  CHECK(daemon.stop() == std::optional<int>(0));
}

TEST_CASE("an OSD whose debug file is a decompression bomb has its stages say so",
          "[kernel][resolver][hostile][userspace]") {
  const std::string dir = test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
  auto binary = cephscope::profile::ElfFile::open(CEPHSCOPE_FAKE_OSD);
  REQUIRE(binary.ok());
  auto id = binary->build_id();
  REQUIRE(id.ok());
  // Where the resolver looks for this build's debug file on the host: fake_osd's build-id is
  // no one else's. 2 GiB + 16 MiB of zeros from 2 MB.
  const std::string debug =
      "/usr/lib/debug/.build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug";
  REQUIRE_FALSE(fs::exists(debug));
  fs::create_directories(fs::path(debug).parent_path());
  struct Remove {
    std::string path;
    ~Remove() { fs::remove(path); }
  } remove{debug};
  write_elf_bomb(debug, (std::uint64_t{2} << 30) + (std::uint64_t{16} << 20), *id);

  Daemon daemon(dir, "collectors:\n  osd: {enabled: true}\nprofiles:\n  cache_dir: " + dir +
                         "/bomb-cache\n  shipped_dirs: []\n");
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  fs::remove_all(dir + "/bomb-cache");
  // Without its own DWARF (fake_osd is built with -g), so that the debug file is looked for.
  const std::string exe = copy_fake_osd(dir + "/osd-bomb", CEPHSCOPE_FAKE_OSD_STRIPPED);
  auto osd = std::make_unique<Subprocess>(std::vector<std::string>{exe, "-i", "91"});
  // The stage's reason label is one word of the fixed set; the cap's figures are in the log.
  std::string reason;
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(eventually(
      [&] {
        for (const auto& s :
             daemon.scrape().find("cephscope_osd_stage_available", {{"ceph_daemon", "osd.91"}})) {
          if (s.value == 0 && s.labels.at("reason") != "ok" &&
              daemon.log().find("over the cap of 2147483648") != std::string::npos) {
            reason = s.labels.at("reason");
            return true;
          }
        }
        return false;
      },
      std::chrono::seconds(60)));
  std::printf("bomb refused and reported in %.2f s: reason=\"%s\"\n",
              Seconds(std::chrono::steady_clock::now() - t0).count(), reason.c_str());
  CHECK(daemon.log().find("debug sections inflate to 2164260864 bytes") != std::string::npos);
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(daemon.stop() == std::optional<int>(0));
  std::printf("SIGTERM to exit: %.3f s\n", Seconds(std::chrono::steady_clock::now() - t1).count());
}

TEST_CASE("--check names each OSD's build and what to install when no profile fits",
          "[kernel][discovery][check][userspace]") {
  const std::string dir = test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
  auto osd = std::make_unique<Subprocess>(
      std::vector<std::string>{copy_fake_osd(dir + "/check"), "-i", "83", "--fsid", kInsideFsid});
  const std::string config = dir + "/check.yaml";
  std::ofstream(config) << "profiles:\n  cache_dir: " << dir
                        << "/check-cache\n  shipped_dirs: []\n";
  std::string out;
  REQUIRE(eventually([&] {
    out.clear();
    return run_command(daemon_binary() + " --check --config " + config + " 2>/dev/null", &out) ==
               0 &&
           out.find("osd target=osd.83 pid=" + std::to_string(osd->pid())) != std::string::npos;
  }));
  const auto line_at = out.find("osd target=osd.83");
  const std::string line = out.substr(line_at, out.find('\n', line_at) - line_at);
  INFO(line);
  CHECK(line.find("build_id=") != std::string::npos);
  CHECK(line.find("profile=none") != std::string::npos);
  CHECK(line.find("no_debuginfo") != std::string::npos);
  CHECK(line.find("Install ceph-osd-dbg for build-id") != std::string::npos);
}

TEST_CASE("an OSD whose files stall past the lookup timeout gets its fsid once they answer",
          "[kernel][discovery][hostile][userspace]") {
  // The OSD's ceph.conf lies under a file system that does not answer: the daemon (in a
  // session of its own, so that autofs holds it) tracks the OSD without its fsid after 2 s,
  // and once the file system answers, tracks it again with the fsid the file names, and the
  // OSD collector attaches it anew under that target.
  const std::string dir = test_dir(std::string(CEPHSCOPE_BUILD_DIR) + "/kernel-tests");
  StalledMount stalled(dir + "/stalled");
  fs::remove_all(dir + "/stall-cache");
  Daemon daemon(dir,
                "collectors:\n  osd: {enabled: true, detail: never}\nprofiles:\n  cache_dir: " +
                    dir + "/stall-cache\n  shipped_dirs: []\ndiscovery:\n  scan_interval: 1s\n",
                {"/usr/bin/setsid"});
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  auto osd = std::make_unique<Subprocess>(std::vector<std::string>{
      copy_fake_osd(dir + "/osd-77"), "-i", "77", "-c", dir + "/stalled/conf/ceph.conf"});

  const auto request = stalled.wait_request(std::chrono::seconds(15));
  REQUIRE(request.has_value());
  CHECK(request->key == "conf");
  const auto held = std::chrono::steady_clock::now();
  // Tracked without its fsid once the lookup has taken 2 s; the timeout counted.
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 77, osd->pid()).empty(); }));
  CHECK(daemon.scrape().sum("cephscope_discovery_refusals_total", {{"reason", "timeout"}}) == 1);
  std::printf("tracked without its fsid %.2f s after its lookup was held\n",
              Seconds(std::chrono::steady_clock::now() - held).count());

  stalled.answer(*request, "ceph.conf", std::string("[global]\nfsid = ") + kHostFsid + "\n");
  REQUIRE(eventually([&] { return tracked_fsid(daemon, 77, osd->pid()) == kHostFsid; }));
  CHECK(log_has(daemon, "its lookup returned after", std::chrono::seconds(2)));
  // One process, one target: no series of osd.77 for this pid without the fsid any more.
  CHECK(daemon.scrape()
            .find("cephscope_target_info",
                  {{"ceph_daemon", "osd.77"}, {"pid", std::to_string(osd->pid())}})
            .size() == 1);
  // The OSD collector released the process and attached it again under the new target: its
  // stage statuses (which fake_osd's build reports unavailable) carry the fsid.
  CHECK(eventually([&] {
    const auto stages =
        daemon.scrape().find("cephscope_osd_stage_available", {{"ceph_daemon", "osd.77"}});
    return !stages.empty() && std::all_of(stages.begin(), stages.end(), [](const auto& s) {
      const auto fsid = s.labels.find("fsid");
      return fsid != s.labels.end() && fsid->second == kHostFsid;
    });
  }));
  CHECK(daemon.stop() == std::optional<int>(0));
}
