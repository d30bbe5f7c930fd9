// core/safe_file.h: files a target names are opened without blocking, inside its root, under
// a size cap. The root here is a directory fd, as /proc/PID/root opened O_PATH is.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/safe_file.h"

using namespace cephscope;
namespace fs = std::filesystem;

namespace {

struct Root {
  std::string dir;
  UniqueFd fd;
  Root() {
    std::string tmpl = (fs::temp_directory_path() / "safe-file-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
    fs::create_directories(dir + "/etc/ceph");
    std::ofstream(dir + "/etc/passwd") << "inside\n";
    std::ofstream(dir + "/etc/ceph/ceph.conf") << "[global]\nfsid = x\n";
    fd.reset(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd.valid());
  }
  ~Root() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
};

std::string reason_of(const Result<std::string>& r) {
  return r.ok() ? "ok" : r.error().reason;
}

}  // namespace

TEST_CASE("a regular file inside the root is read whole", "[safe_file]") {
  Root root;
  for (auto walk : {RootWalk::kAuto, RootWalk::kWalk}) {
    auto text = read_in_root(root.fd.get(), "/etc/ceph/ceph.conf", 1024, walk);
    REQUIRE(text.ok());
    CHECK(*text == "[global]\nfsid = x\n");
  }
}

TEST_CASE("a FIFO, a socket and a directory are refused at once, never opened", "[safe_file]") {
  Root root;
  REQUIRE(mkfifo((root.dir + "/fifo").c_str(), 0600) == 0);
  const UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = root.dir + "/sock";
  REQUIRE(sock_path.size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock_path.c_str());
  REQUIRE(bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  for (auto walk : {RootWalk::kAuto, RootWalk::kWalk}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto fifo = read_in_root(root.fd.get(), "/fifo", 1024, walk);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
    CHECK(reason_of(fifo) == "not_regular");
    CHECK(fifo.error().message.find("a FIFO") != std::string::npos);
    CHECK(reason_of(read_in_root(root.fd.get(), "/sock", 1024, walk)) == "not_regular");
    CHECK(reason_of(read_in_root(root.fd.get(), "/etc", 1024, walk)) == "not_regular");
  }
  CHECK(open_regular(root.dir + "/fifo").error().reason == "not_regular");
}

TEST_CASE("symlinks never lead out of the root", "[safe_file]") {
  Root root;
  // Absolute and relative escapes: both resolve inside the root, as the target sees them.
  fs::create_symlink("/etc/passwd", root.dir + "/etc/ceph/abs.conf");
  fs::create_symlink("../../../../../../etc/passwd", root.dir + "/etc/ceph/rel.conf");
  fs::create_symlink("/proc/self/root/etc/passwd", root.dir + "/etc/ceph/magic.conf");
  fs::create_symlink("/etc/hostname", root.dir + "/etc/ceph/missing.conf");
  auto abs = read_in_root(root.fd.get(), "/etc/ceph/abs.conf", 1024);
  REQUIRE(abs.ok());
  CHECK(*abs == "inside\n");
  auto rel = read_in_root(root.fd.get(), "/etc/ceph/rel.conf", 1024);
  REQUIRE(rel.ok());
  CHECK(*rel == "inside\n");
  // /proc/self/root is a magic link: refused (and /proc is not in this root anyway).
  CHECK_FALSE(read_in_root(root.fd.get(), "/etc/ceph/magic.conf", 1024).ok());
  // The host has /etc/hostname; the root has not.
  CHECK(reason_of(read_in_root(root.fd.get(), "/etc/ceph/missing.conf", 1024)) == "not_found");
  // Without openat2, any symlink on the way is refused.
  CHECK(reason_of(read_in_root(root.fd.get(), "/etc/ceph/abs.conf", 1024, RootWalk::kWalk)) ==
        "symlink");
  fs::create_directory_symlink("/etc", root.dir + "/hostetc");
  CHECK(reason_of(read_in_root(root.fd.get(), "/hostetc/passwd", 1024, RootWalk::kWalk)) ==
        "symlink");
  auto via_dir = read_in_root(root.fd.get(), "/hostetc/passwd", 1024);
  REQUIRE(via_dir.ok());
  CHECK(*via_dir == "inside\n");
}

TEST_CASE("paths that are relative or climb with .. are refused", "[safe_file]") {
  Root root;
  CHECK(reason_of(read_in_root(root.fd.get(), "etc/passwd", 1024)) == "bad_path");
  CHECK(reason_of(read_in_root(root.fd.get(), "/etc/../../etc/passwd", 1024)) == "bad_path");
  CHECK(reason_of(read_in_root(root.fd.get(), "/..", 1024)) == "bad_path");
  CHECK(reason_of(read_in_root(root.fd.get(), "", 1024)) == "bad_path");
}

TEST_CASE("a file over the cap is refused by its size, sparse or not, without reading it",
          "[safe_file]") {
  Root root;
  const std::string big = root.dir + "/etc/ceph/big.conf";
  {
    const UniqueFd fd(open(big.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    REQUIRE(fd.valid());
    REQUIRE(ftruncate(fd.get(), off_t{10} << 30) == 0);  // 10 GiB, no block written
  }
  for (auto walk : {RootWalk::kAuto, RootWalk::kWalk}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = read_in_root(root.fd.get(), "/etc/ceph/big.conf", std::size_t{256} * 1024, walk);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().reason == "too_large");
    CHECK(r.error().message.find("10737418240 bytes") != std::string::npos);
  }
  CHECK(open_regular(big, SafeOpen{1024}).error().reason == "too_large");
  CHECK(open_regular(big, SafeOpen{std::uint64_t{16} << 30}).ok());
}
