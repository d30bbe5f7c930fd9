// The daemon's endpoint as an operator secures it and as a slow client finds it: the web
// config named in the config file gives TLS and basic auth from the start, SIGHUP swaps it, a
// bad one is rejected; half-open connections neither starve a scrape nor outlive the header
// timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "support/daemon_runner.h"
#include "support/web_fixture.h"

using namespace cephscope::test;

namespace {

// curl's status code for `url`, "000" when no HTTP answer came.
std::string curl_status(const std::string& options, const std::string& url) {
  std::string out;
  run_command("curl -sS --max-time 10 -o /dev/null -w '%{http_code}' " + options + " " + url, &out);
  return out.substr(out.size() >= 3 ? out.size() - 3 : 0);
}

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A connection to 127.0.0.1:port that sends half a request head and stops.
int half_open(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  const std::string half = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slo";
  REQUIRE(send(fd, half.data(), half.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(half.size()));
  return fd;
}

}  // namespace

// The daemon's own header timeout (10 s, daemon/server/http_server.h), from the real binary
// with its real render. Plain sockets only, so it runs in the kernel-matrix guest too.
TEST_CASE(
    "the daemon's scrapes complete beside 32 half-open connections, which it closes after "
    "its header timeout",
    "[kernel][userspace]") {
  constexpr double kHeaderTimeoutMs = 10'000;
  const std::string dir = test_dir("/tmp");
  Daemon daemon(dir, "");
  DaemonLogOnFailure show_log(daemon);
  REQUIRE(daemon.wait_ready());

  const auto first_connect = Clock::now();
  std::vector<int> fds;
  fds.reserve(32);
  for (int i = 0; i < 32; ++i) {
    fds.push_back(half_open(daemon.port()));
  }
  std::vector<double> latency_ms;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    int status = 0;
    const auto body = http_get(daemon.port(), "/metrics", &status);
    latency_ms.push_back(ms_since(t0));
    REQUIRE(body);
    REQUIRE(status == 200);
    REQUIRE(body->find("cephscope_build_info") != std::string::npos);
  }
  std::sort(latency_ms.begin(), latency_ms.end());
  std::printf(
      "daemon scrape latency beside 32 half-open connections: min %.2f ms, median %.2f ms, "
      "max %.2f ms over %zu scrapes\n",
      latency_ms.front(), latency_ms[latency_ms.size() / 2], latency_ms.back(), latency_ms.size());

  // Each is closed by the daemon (EOF, no response), none before the header timeout, which
  // runs from its accept, after its connect began. When each was seen closed (not yet: -1).
  std::vector<double> closed_ms(fds.size(), -1);
  const auto give_up = Clock::now() + std::chrono::seconds(40);
  while (std::count(closed_ms.begin(), closed_ms.end(), -1.0) > 0 && Clock::now() < give_up) {
    std::vector<pollfd> polled;
    polled.reserve(fds.size());
    for (int fd : fds) {
      polled.push_back({fd, POLLIN, 0});
    }
    REQUIRE(poll(polled.data(), polled.size(), 100) >= 0);
    for (std::size_t i = 0; i < polled.size(); ++i) {
      if (closed_ms[i] < 0 && polled[i].revents != 0) {
        closed_ms[i] = ms_since(first_connect);
        std::array<char, 16> buf{};
        CHECK(recv(fds[i], buf.data(), buf.size(), MSG_DONTWAIT) <= 0);
      }
    }
  }
  for (std::size_t i = 0; i < fds.size(); ++i) {
    INFO("half-open connection " << i);
    CHECK(closed_ms[i] >= kHeaderTimeoutMs);
    close(fds[i]);
  }
  std::printf(
      "the daemon closed the 32 half-open connections %.0f to %.0f ms after the first "
      "connect (header timeout %.0f ms)\n",
      *std::min_element(closed_ms.begin(), closed_ms.end()),
      *std::max_element(closed_ms.begin(), closed_ms.end()), kHeaderTimeoutMs);
  CHECK(daemon.stop() == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the daemon serves TLS and basic auth from its web config and reloads it on SIGHUP",
          "[kernel][endpoint]") {
  const std::string dir = test_dir("/tmp");
  const TestPki pki = make_test_pki(dir);
  write_text(dir + "/web.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
             "basic_auth_users:\n  alice: " +
                 htpasswd_hash("alice", "s3cret") + "\n");
  Daemon daemon(dir, "web_config_file: " + dir + "/web.yml\n");
  DaemonLogOnFailure show_log(daemon);
  const std::string port = std::to_string(daemon.port());
  const std::string https = "https://127.0.0.1:" + port;
  const std::string tls = "--cacert " + pki.ca_cert;
  REQUIRE(
      eventually([&] { return curl_status(tls + " -u alice:s3cret", https + "/readyz") == "200"; },
                 std::chrono::seconds(30)));
  CHECK(daemon.log().find("TLS (min TLS12, client certificates NoClientCert), basic auth (1 "
                          "users)") != std::string::npos);
  CHECK(curl_status(tls + " -u alice:s3cret", https + "/metrics") == "200");
  CHECK(curl_status(tls, https + "/metrics") == "401");
  CHECK(curl_status(tls + " -u alice:wrong", https + "/metrics") == "401");
  CHECK(curl_status("", "http://127.0.0.1:" + port + "/metrics") == "000");

  // SIGHUP: another file, plain HTTP with another user.
  write_text(dir + "/web.yml",
             "basic_auth_users:\n  carol: " + htpasswd_hash("carol", "pw") + "\n");
  kill(daemon.pid(), SIGHUP);
  const std::string http = "http://127.0.0.1:" + port + "/metrics";
  REQUIRE(eventually([&] { return curl_status("-u carol:pw", http) == "200"; },
                     std::chrono::seconds(10)));
  CHECK(curl_status("-u alice:s3cret", http) == "401");

  // A bad web config at SIGHUP is rejected and the running one stays.
  write_text(dir + "/web.yml", "basic_auth_users:\n  carol: pw\n");
  kill(daemon.pid(), SIGHUP);
  REQUIRE(eventually(
      [&] {
        return daemon.log().find("basic_auth_users.carol: not a bcrypt hash") != std::string::npos;
      },
      std::chrono::seconds(10)));
  CHECK(daemon.log().find("reload rejected") != std::string::npos);
  CHECK(curl_status("-u carol:pw", http) == "200");
  CHECK(daemon.stop() == 0);
  std::filesystem::remove_all(dir);
}
