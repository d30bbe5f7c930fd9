// Debuginfo through debuginfod: a real `debuginfod` server (Debian's debuginfod package) serving
// the fixture's separate debug file, the stripped binary alone on disk. Then the same lookup
// against a closed port and a server that never answers: offsets fall back to the symbol
// table, with the reason, within a bounded time. No root needed; exits 77 when the debuginfod
// server is not installed or this build has no libdebuginfod.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gelf.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "catch_session.h"
#include "fixture_util.h"
#include "profile/elf_file.h"
#include "profile/probe_set.h"
#include "profile/store.h"
#include "resolver/debuginfo.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"

using namespace cephscope::profile;
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::optional<std::string> find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    const size_t colon = std::min(dirs.find(':', at), dirs.size());
    const std::string candidate = dirs.substr(at, colon - at) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    at = colon + 1;
  }
  return std::nullopt;
}

// Sets (or unsets, with nullopt) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) {
      old_ = old;
    }
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A loopback TCP socket on a kernel-chosen port; LISTENING: listen() but never accept().
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listening) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    if (listening) {
      REQUIRE(::listen(fd_, 16) == 0);
    }
  }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;
  ~LoopbackSocket() { close(); }
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  [[nodiscard]] int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A free loopback port (bound, then released: nothing listens there).
int free_port() {
  LoopbackSocket s(false);
  return s.port();
}

// GET PATH from 127.0.0.1:PORT; the HTTP status, or 0 when nothing answers.
int http_status(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return 0;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  int status = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {};
      const ssize_t n = ::read(fd, buf, sizeof buf - 1);
      if (n > 12 && std::sscanf(buf, "HTTP/%*s %d", &status) != 1) {
        status = 0;
      }
    }
  }
  ::close(fd);
  return status;
}

// `debuginfod -F DIR` on a free port, killed (and reaped) on destruction. debuginfod 0.188
// has no listen-address option: it listens on every address of the host for the few seconds
// the test runs; clients here only use 127.0.0.1.
class DebuginfodServer {
 public:
  DebuginfodServer(const std::string& exe, const std::string& dir, const test::TempDir& tmp) {
    log_ = tmp / "debuginfod.log";
    // A port taken between free_port() and the server's bind: try another.
    for (int attempt = 0; attempt < 3 && pid_ < 0; ++attempt) {
      port_ = free_port();
      const std::string db = tmp / ("debuginfod-" + std::to_string(attempt) + ".sqlite");
      const std::string port = std::to_string(port_);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        // No federation: a 404 must not be forwarded to the distribution's servers.
        ::unsetenv("DEBUGINFOD_URLS");
        const int out = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (out >= 0) {
          ::dup2(out, 1);
          ::dup2(out, 2);
        }
        ::execl(exe.c_str(), exe.c_str(), "-F", "-p", port.c_str(), "-d", db.c_str(), "-t", "0",
                "-g", "0", "-c", "1", dir.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
      }
      // Up when /metrics answers.
      const auto deadline = Clock::now() + std::chrono::seconds(30);
      while (Clock::now() < deadline) {
        if (::waitpid(pid, nullptr, WNOHANG) == pid) {
          break;  // exited (port taken?): next attempt
        }
        if (http_status(port_, "/metrics") == 200) {
          pid_ = pid;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (pid_ < 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    INFO(test::read_file(log_));
    REQUIRE(pid_ > 0);
  }
  DebuginfodServer(const DebuginfodServer&) = delete;
  DebuginfodServer& operator=(const DebuginfodServer&) = delete;
  ~DebuginfodServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      const auto deadline = Clock::now() + std::chrono::seconds(5);
      while (::waitpid(pid_, nullptr, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, nullptr, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] std::string log() const { return test::read_file(log_); }

  // Waits until the initial scan has indexed BUILD_ID: the server then serves its debuginfo.
  [[nodiscard]] bool wait_indexed(const std::string& build_id, std::chrono::seconds limit) const {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (http_status(port_, "/buildid/" + build_id + "/debuginfo") == 200) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

// Every function address of the oracle, as an out-of-line instance at the right file offset.
void check_functions(const Profile& p, const json& o, const std::string& binary) {
  for (const auto& [key, vaddr] : o["functions"].items()) {
    const std::string name = key.substr(0, key.find('|'));
    const std::string linkage = key.substr(key.find('|') + 1);
    INFO("function " << name << " " << linkage);
    const FunctionEntry* f = p.function(name);
    REQUIRE(f != nullptr);
    const FunctionInstance* found = nullptr;
    for (const auto& i : f->instances) {
      if (!i.inlined && i.linkage_name == linkage) {
        found = &i;
      }
    }
    REQUIRE(found != nullptr);
    CHECK(found->vaddr == vaddr.get<uint64_t>());
    CHECK(found->file_offset == test::file_offset_of(binary, found->vaddr));
  }
}

// The stripped -O2 fixture alone in a directory: no .gnu_debuglink target next to it, and
// the search's debug directory empty, so only debuginfod can supply its DWARF.
struct StrippedCopy {
  test::TempDir dir;
  std::string binary;
  std::string build_id;
  DebugSearch search;

  StrippedCopy() {
    fs::create_directories(dir / "bin");
    fs::create_directories(dir / "no-debug");
    binary = dir / "bin/profile_fixture_O2.stripped";
    fs::copy_file(FIXTURE_O2_STRIPPED, binary);
    fs::permissions(binary, fs::perms::owner_all);
    build_id = *ElfFile::open(binary)->build_id();
    search.debug_dir = dir / "no-debug";
  }

  // A store that caches in CACHE_DIR, ships nothing and searches debuginfo as this copy does.
  [[nodiscard]] ProfileStore store(const std::string& cache_dir) const {
    StoreOptions so;
    so.cache_dir = cache_dir;
    so.shipped_dirs = {};
    so.debug_dir = search.debug_dir;
    so.limits.executable = RESOLVER_BIN;
    return ProfileStore(so);
  }
};

}  // namespace

TEST_CASE("debuginfo is fetched from a debuginfod server", "[unit][debuginfod]") {
  StrippedCopy fx;
  test::TempDir tmp;
  fs::create_directories(tmp / "srv");
  fs::copy_file(FIXTURE_O2_DEBUG, tmp / "srv/profile_fixture_O2.debug");
  const std::string cache = tmp / "client-cache";

  // Nothing local: the lookup fails before debuginfod is configured.
  {
    ScopedEnv urls("DEBUGINFOD_URLS", std::nullopt);
    CHECK_FALSE(find_debuginfo(*ElfFile::open(fx.binary), fx.build_id, fx.binary, fx.search).ok());
  }

  DebuginfodServer server(*find_in_path("debuginfod"), tmp / "srv", tmp);
  {
    const bool indexed = server.wait_indexed(fx.build_id, std::chrono::seconds(120));
    INFO(server.log());
    REQUIRE(indexed);
  }
  ScopedEnv urls("DEBUGINFOD_URLS", server.url());
  ScopedEnv cache_path("DEBUGINFOD_CACHE_PATH", cache);
  ScopedEnv timeout("DEBUGINFOD_TIMEOUT", "30");
  ScopedEnv progress("DEBUGINFOD_PROGRESS", std::nullopt);

  const json o = test::oracle(fx.binary);
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(set.ok());

  SECTION("find_debuginfo and the resolver") {
    auto binary = ElfFile::open(fx.binary);
    REQUIRE(binary.ok());
    auto ref = find_debuginfo(*binary, fx.build_id, fx.binary, fx.search);
    INFO((ref.ok() ? ref->path : ref.error().message) << "\n" << server.log());
    REQUIRE(ref.ok());
    CHECK(ref->source == DebugSource::kDebuginfod);
    CHECK(to_string(ref->source) == "debuginfod");
    // The client's cached download, not the file the server reads.
    CHECK(ref->path.starts_with(cache + "/"));
    CHECK_FALSE(fs::equivalent(ref->path, tmp / "srv/profile_fixture_O2.debug"));
    CHECK(test::read_file(ref->path) == test::read_file(FIXTURE_O2_DEBUG));

    auto dwarf = DwarfFile::open(ref->path);
    REQUIRE(dwarf.ok());
    auto p = resolve_profile(*binary, &*dwarf, *set);
    REQUIRE(p.ok());
    CHECK(p->source == "dwarf");
    CHECK(p->build_id == fx.build_id);
    check_functions(*p, o, fx.binary);
    for (const auto& [name, size] : o["types"].items()) {
      INFO("type " << name);
      REQUIRE(p->type(name) != nullptr);
      CHECK(p->type(name)->size == size.get<uint64_t>());
    }
    for (const auto& [key, v] : o["members"].items()) {
      const std::string type = key.substr(0, key.find('|'));
      const std::string path = key.substr(key.find('|') + 1);
      INFO("member " << type << "." << path);
      const MemberEntry* m = p->member(type, path);
      REQUIRE(m != nullptr);
      CHECK(m->status == ItemStatus::kOk);
      CHECK(m->offset == v[0].get<uint64_t>());
    }
  }
  SECTION("the store reports debuginfod as the source") {
    ProfileStore store = fx.store(tmp / "profiles");
    auto loaded = store.for_binary(fx.binary, *set);
    REQUIRE(loaded.ok());
    CHECK(loaded->origin == Origin::kResolved);
    CHECK(loaded->debug_source == to_string(DebugSource::kDebuginfod));
    CHECK(loaded->location.starts_with(cache + "/"));
    CHECK(loaded->profile.source == "dwarf");
    check_functions(loaded->profile, o, fx.binary);
  }
}

TEST_CASE("an unreachable debuginfod falls back to the symbol table, bounded",
          "[unit][debuginfod]") {
  StrippedCopy fx;
  test::TempDir tmp;
  const json o = test::oracle(fx.binary);
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(set.ok());
  // libdebuginfod gives up on a server after DEBUGINFOD_TIMEOUT s without progress (default
  // 90) and retries DEBUGINFOD_RETRY_LIMIT times (default 2): a silent server costs
  // timeout x (1 + retries) per lookup.
  ScopedEnv timeout("DEBUGINFOD_TIMEOUT", "3");
  ScopedEnv retries("DEBUGINFOD_RETRY_LIMIT", "2");
  ScopedEnv progress("DEBUGINFOD_PROGRESS", std::nullopt);

  // A closed port (refused at once) and a port that accepts connections and never answers
  // (ended by DEBUGINFOD_TIMEOUT).
  for (const bool silent : {false, true}) {
    DYNAMIC_SECTION((silent ? "silent server" : "closed port")) {
      LoopbackSocket sock(silent);
      if (!silent) {
        sock.close();
      }
      ScopedEnv urls("DEBUGINFOD_URLS", "http://127.0.0.1:" + std::to_string(sock.port()));
      // Its own client cache: no negative-cache entry from the other case.
      ScopedEnv cache_path("DEBUGINFOD_CACHE_PATH",
                           tmp / (silent ? "client-cache-silent" : "client-cache-closed"));
      auto binary = ElfFile::open(fx.binary);
      REQUIRE(binary.ok());
      const auto t0 = Clock::now();
      auto ref = find_debuginfo(*binary, fx.build_id, fx.binary, fx.search);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      INFO("took " << s << " s");
      REQUIRE_FALSE(ref.ok());
      const std::string& why = ref.error().message;
      INFO(why);
      CHECK(ref.error().kind == cephscope::ErrorKind::kNotFound);
      CHECK(why.find("no debuginfo for build-id " + fx.build_id) != std::string::npos);
      CHECK(why.find("; debuginfod: ") != std::string::npos);
      CHECK(why.find(silent ? "Timer expired" : "Connection refused") != std::string::npos);
      // Refused at once; silent: 3 tries of 3 s, plus slack for a loaded machine.
      CHECK(s < (silent ? 15.0 : 5.0));
      if (silent) {
        CHECK(s >= 3.0);  // it was the timeout that ended it
      }

      ProfileStore store = fx.store(tmp / (silent ? "profiles-silent" : "profiles-closed"));
      auto loaded = store.for_binary(fx.binary, *set);
      REQUIRE(loaded.ok());
      CHECK(loaded->origin == Origin::kResolved);
      CHECK(loaded->debug_source.empty());
      CHECK(loaded->profile.source == "symtab");
      check_functions(loaded->profile, o, fx.binary);
      CHECK(loaded->profile.type("fx::Derived")->status == ItemStatus::kNoDebuginfo);
    }
  }
}

int main(int argc, char** argv) {
  if (!have_debuginfod()) {
    std::printf("skipped: built without libdebuginfod (libdebuginfod-dev)\n");
    return 77;
  }
  if (!find_in_path("debuginfod")) {
    std::printf("skipped: no debuginfod server in PATH (Debian package debuginfod)\n");
    return 77;
  }
  return run_catch_session(argc, argv);
}
