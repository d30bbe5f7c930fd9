// The endpoint under every kind of hostile client at once, while an operator's scraper with
// the right credentials keeps scraping from 127.0.0.1: 1,000 idle connections, heads sent a
// byte a second, a 1 MiB head, NUL and non-ASCII bytes in the request line, unknown methods,
// pipelined requests, a TLS ClientHello on the plain port and plain HTTP on the TLS port, and
// 1,000 wrong passwords from 127.0.0.2. Afterwards the endpoint's process holds the
// descriptors it held before, and about the memory.
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"
#include "support/daemon_runner.h"
#include "support/web_fixture.h"
#include "unit/endpoint_client.h"

using namespace cephscope;
using namespace cephscope::test;
using namespace std::chrono_literals;

namespace {

std::size_t open_descriptors(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) {
      return std::stol(line.substr(6));
    }
  }
  return 0;
}

// The plain and the TLS endpoint in a child process of their own, so that the descriptors and
// the memory measured are the endpoint's alone. The child ends when `hold` closes.
struct ServerChild {
  pid_t pid = -1;
  int plain_port = 0;
  int tls_port = 0;
  int hold = -1;

  ServerChild(const std::string& plain_web, const std::string& tls_web) {
    int ports[2];
    int held[2];
    REQUIRE(pipe(ports) == 0);
    REQUIRE(pipe(held) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(ports[0]);
      close(held[1]);
      try {
        auto plain = load_web_config(plain_web);
        auto tls = load_web_config(tls_web);
        if (!plain.ok() || !tls.ok()) {
          _exit(2);
        }
        HttpServer::Options options;
        options.header_timeout = 3s;
        Served p(options, std::move(*plain));
        Served t(options, std::move(*tls));
        const std::array<int, 2> bound{p.port, t.port};
        if (write(ports[1], bound.data(), sizeof(bound)) != sizeof(bound)) {
          _exit(3);
        }
        char c = 0;
        while (read(held[0], &c, 1) > 0) {
        }
      } catch (...) {
        _exit(4);
      }
      _exit(0);
    }
    close(ports[1]);
    close(held[0]);
    hold = held[1];
    std::array<int, 2> bound{};
    REQUIRE(read(ports[0], bound.data(), sizeof(bound)) == sizeof(bound));
    close(ports[0]);
    plain_port = bound[0];
    tls_port = bound[1];
  }
  ~ServerChild() {
    close(hold);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;
};

// How many responses a raw answer holds.
std::size_t responses(const std::string& raw) {
  std::size_t n = 0;
  for (auto at = raw.find("HTTP/1.1 "); at != std::string::npos;
       at = raw.find("HTTP/1.1 ", at + 1)) {
    ++n;
  }
  return n;
}

// One raw exchange on a connection of its own: what came back before the server closed.
std::string raw_exchange(int port, const std::string& bytes) {
  const int fd = connect_local(port);
  (void)send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);  // the server may stop reading
  std::string raw = read_to_end(fd, 20s);
  close(fd);
  return raw;
}

// One round of every attack at once, with the scraper beside it; the malformed requests are
// checked as they are answered, the rest is returned.
struct Round {
  std::vector<double> scrape_ms;
  std::vector<int> scrape_status;
  int refused = 0;
  int throttled = 0;
  int other = 0;
  double guessing_s = 0;
};

Round attack(int plain_port, int tls_port, const std::string& scrape, const char* guesser) {
  struct {
    int port;
  } plain{plain_port}, tls{tls_port};
  std::atomic<bool> attacking{true};
  std::vector<double> scrape_ms;
  std::vector<int> scrape_status;
  std::thread scraper([&] {
    while (attacking) {
      const auto t0 = Clock::now();
      scrape_status.push_back(ask(plain.port, scrape).status);
      scrape_ms.push_back(ms_since(t0));
      std::this_thread::sleep_for(200ms);
    }
  });

  std::vector<std::thread> attackers;
  // 1,000 connections that never send a byte
  std::vector<int> idle;
  idle.reserve(1000);
  attackers.emplace_back([&] {
    for (int i = 0; i < 1000; ++i) {
      idle.push_back(connect_local(plain.port));
    }
  });
  // heads a byte a second, for 6 s
  attackers.emplace_back([&] {
    std::vector<int> slow;
    slow.reserve(20);
    for (int i = 0; i < 20; ++i) {
      slow.push_back(connect_local(plain.port));
    }
    for (int second = 0; second < 6; ++second) {
      for (int fd : slow) {
        (void)send(fd, &kHalfHead[static_cast<std::size_t>(second)], 1, MSG_NOSIGNAL);
      }
      std::this_thread::sleep_for(1s);
    }
    for (int fd : slow) {
      close(fd);
    }
  });
  // 1,000 wrong passwords from `guesser`, four clients at a time
  std::atomic<int> refused{0};
  std::atomic<int> throttled{0};
  std::atomic<int> other{0};
  const auto guessing_since = Clock::now();
  for (int t = 0; t < 4; ++t) {
    attackers.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) {
        const std::string guess = "alice:guess" + std::to_string(t * 250 + i);
        const int status =
            ask(plain.port, request("GET", "/metrics", basic_header(guess)), guesser).status;
        (status == 401 ? refused : status == 429 ? throttled : other)++;
      }
    });
  }

  // Meanwhile, one of each malformed or foreign request; each answered alone.
  const std::string head_1mib =
      "GET /metrics HTTP/1.1\r\n" + std::string(1 << 20, 'a') + ": b\r\n\r\n";
  {
    const std::string raw = raw_exchange(plain.port, head_1mib);
    INFO(raw.substr(0, 200));
    CHECK(raw.starts_with("HTTP/1.1 431"));
  }
  CHECK(raw_exchange(plain.port, std::string("GET /met\0rics HTTP/1.1\r\n\r\n", 26))
            .starts_with("HTTP/1.1 400"));
  CHECK(raw_exchange(plain.port, "GET /\xff\xfe\x80 HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 4"));
  CHECK(raw_exchange(plain.port, "G\x01T /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400"));
  const std::string brew = raw_exchange(
      plain.port, "BREW /metrics HTTP/1.1\r\n" + basic_header("alice:s3cret") + "\r\n");
  CHECK(brew.starts_with("HTTP/1.1 405"));
  CHECK(brew.find("Allow: GET, HEAD\r\n") != std::string::npos);
  // pipelined: the first request is answered, and the connection closed after it
  const std::string two =
      raw_exchange(plain.port, request("GET", "/healthz", basic_header("alice:s3cret")) +
                                   request("GET", "/metrics", basic_header("alice:s3cret")));
  CHECK(two.starts_with("HTTP/1.1 200"));
  CHECK(two.find("ok\n") != std::string::npos);
  CHECK(responses(two) == 1);
  // a TLS ClientHello (its record header and the start of a handshake) on the plain port: no
  // head ever ends, the header deadline closes it
  {
    const auto t0 = Clock::now();
    const std::string hello("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11);
    CHECK(raw_exchange(plain.port, hello + std::string(64, '\x42')).empty());
    CHECK(ms_since(t0) < 3000 + 2000);
  }
  // plain HTTP on the TLS port: the handshake fails and the connection closes, unanswered
  {
    const auto t0 = Clock::now();
    const std::string raw = raw_exchange(tls.port, scrape);
    CHECK(raw.find("cephscope_fake_total") == std::string::npos);
    CHECK(ms_since(t0) < 2000);
  }

  for (std::size_t i = 1; i < attackers.size(); ++i) {
    attackers[i].join();
  }
  attackers[0].join();
  const double guessing_s = ms_since(guessing_since) / 1000;
  attacking = false;
  scraper.join();
  for (int fd : idle) {
    close(fd);
  }

  Round r;
  r.scrape_ms = std::move(scrape_ms);
  r.scrape_status = std::move(scrape_status);
  r.refused = refused;
  r.throttled = throttled;
  r.other = other;
  r.guessing_s = guessing_s;
  return r;
}

}  // namespace

TEST_CASE("hostile clients all at once: the scraper is answered within 1 s, nothing stays behind",
          "[endpoint][auth][hostile]") {
  // 1,000 idle connections and the server's side of them: more than the usual 1,024
  rlimit files{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &files) == 0);
  files.rlim_cur = std::min<rlim_t>(files.rlim_max, 8192);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &files) == 0);
  REQUIRE(files.rlim_cur >= 2048);

  const std::string dir = test_dir("/tmp");
  const TestPki pki = make_test_pki(dir);
  const std::string users =
      "basic_auth_users:\n  alice: " + htpasswd_hash("alice", "s3cret") + "\n";
  write_text(dir + "/plain.yml", users);
  write_text(dir + "/tls.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n" + users);
  ServerChild server(dir + "/plain.yml", dir + "/tls.yml");
  struct {
    int port;
  } plain{server.plain_port}, tls{server.tls_port};

  const std::string scrape = request("GET", "/metrics", basic_header("alice:s3cret"));
  REQUIRE(ask(plain.port, scrape).status == 200);  // the credentials are checked once here
  const std::size_t fds_before = open_descriptors(server.pid);
  const long rss_before = rss_kib(server.pid);

  const Round first = attack(plain.port, tls.port, scrape, "127.0.0.2");
  // the connections gone (idle ones at the header deadline, answered ones after their linger)
  const auto settled = [&] {
    std::size_t fds = 0;
    for (int i = 0; i < 100; ++i) {
      fds = open_descriptors(server.pid);
      if (fds <= fds_before) {
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    return fds;
  };
  const std::size_t fds_first = settled();
  const long rss_first = rss_kib(server.pid);
  const Round second = attack(plain.port, tls.port, scrape, "127.0.0.3");
  const std::size_t fds_after = settled();
  const long rss_after = rss_kib(server.pid);

  for (const Round* r : {&first, &second}) {
    REQUIRE(!r->scrape_ms.empty());
    const double slowest = *std::max_element(r->scrape_ms.begin(), r->scrape_ms.end());
    WARN("scrapes beside the attack: " << r->scrape_ms.size() << ", slowest " << slowest << " ms");
    // every scrape answered 200, within 1 s (0: closed unanswered)
    std::string statuses;
    for (int s : r->scrape_status) {
      statuses += std::to_string(s) + " ";
    }
    INFO("scrape statuses: " << statuses);
    CHECK(std::all_of(r->scrape_status.begin(), r->scrape_status.end(),
                      [](int s) { return s == 200; }));
    CHECK(slowest < 1000);
    // the guesses: a burst of 10 checked, then about one a second; the rest refused unchecked
    WARN("1,000 wrong passwords in " << r->guessing_s << " s: " << r->refused
                                     << " checked and refused, " << r->throttled
                                     << " answered 429 unchecked");
    CHECK(r->other == 0);
    CHECK(r->refused + r->throttled == 1000);
    CHECK(r->refused >= 10);
    CHECK(r->refused <= 10 + static_cast<int>(r->guessing_s) + 2);
  }
  // Afterwards the descriptors as before, and the memory within 10% of what the first round
  // left (the allocator's pools filled once: a fresh process holds less than one that served).
  WARN("descriptors " << fds_before << " -> " << fds_first << " -> " << fds_after << ", RSS "
                      << rss_before << " -> " << rss_first << " -> " << rss_after << " KiB");
  CHECK(fds_first <= fds_before);
  CHECK(fds_after <= fds_before);
#if defined(__SANITIZE_ADDRESS__)
  // ASan's quarantine holds freed memory back (up to 256 MB): RSS says nothing there
  WARN("RSS not compared in an ASan build");
#else
  CHECK(rss_after <= rss_first * 11 / 10);
#endif
  CHECK(ask(plain.port, scrape).status == 200);
  std::filesystem::remove_all(dir);
}
