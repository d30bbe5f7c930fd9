#include "unit/endpoint_client.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cerrno>

#include "support/subprocess.h"

namespace cephscope::test {

using namespace std::chrono_literals;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

const std::string& fake_metrics() {
  static const std::string text = [] {
    std::string t =
        "# HELP cephscope_fake_total A fake counter.\n# TYPE cephscope_fake_total counter\n";
    for (int i = 0; i < 3000; ++i) {
      t += "cephscope_fake_total{osd=\"" + std::to_string(i % 24) + "\",stage=\"s" +
           std::to_string(i) + "\"} " + std::to_string(i * 7) + "\n";
    }
    return t;
  }();
  return text;
}

// The machine's first IPv4 address that is not loopback, when it has one.
std::optional<in_addr> own_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return std::nullopt;
  }
  std::optional<in_addr> out;
  for (const ifaddrs* i = list; i != nullptr && !out; i = i->ifa_next) {
    if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET &&
        (i->ifa_flags & IFF_LOOPBACK) == 0 && (i->ifa_flags & IFF_UP) != 0) {
      out = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    }
  }
  freeifaddrs(list);
  return out;
}

// One request to ADDR:PORT on its own connection.
std::string ask_at(in_addr addr, int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr = addr;
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  std::array<char, 4096> buf{};
  for (;;) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

int connect_local(int port, int rcvbuf, const char* source) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  if (rcvbuf > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  }
  if (source != nullptr) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    REQUIRE(inet_pton(AF_INET, source, &from.sin_addr) == 1);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) == 0);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

void set_recv_timeout(int fd, std::chrono::seconds t) {
  timeval tv{static_cast<time_t>(t.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void send_all(int fd, const std::string& data) {
  REQUIRE(send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size()));
}

// Everything until the server closes; `timed_out` when it had not closed after `limit`.
std::string read_to_end(int fd, std::chrono::seconds limit, bool* timed_out) {
  set_recv_timeout(fd, limit);
  std::string out;
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n > 0) {
      out.append(buf.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;  // a signal (a child of this test exiting) is not the server's answer
    }
    if (timed_out != nullptr) {
      *timed_out = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return out;
  }
}

Reply parse_reply(const std::string& raw) {
  Reply r;
  const auto end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) {
    return r;
  }
  r.status = std::stoi(raw.substr(9, 3));
  std::size_t pos = raw.find("\r\n") + 2;
  while (pos < end) {
    const auto eol = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, eol - pos);
    const auto colon = line.find(':');
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    r.headers[name] = line.substr(colon + 2);
    pos = eol + 2;
  }
  r.body = raw.substr(end + 4);
  return r;
}

// One request on its own connection, as a scraper sends it.
Reply ask(int port, const std::string& request, const char* source) {
  const int fd = connect_local(port, 0, source);
  send_all(fd, request);
  Reply r = parse_reply(read_to_end(fd, 20s));
  close(fd);
  return r;
}

std::string request(const std::string& method, const std::string& path,
                    const std::string& extra_headers) {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
}

Served::Served(HttpServer::Options options, WebConfig web, std::function<std::string()> render,
               const std::string& listen, EndpointSources sources) {
  options.listen = listen;
  sources.metrics = std::move(render);
  sources.ready = &ready;
  routes = std::make_shared<const Routes>(endpoint_routes(std::move(sources)));
  auto s = HttpServer::start(options, serve(routes, std::move(web)));
  REQUIRE(s.ok());
  server = std::move(*s);
  auto bound = server->port();
  REQUIRE(bound.ok());
  port = *bound;
  REQUIRE(port > 0);
}

// Whether the server has closed `fd` (EOF or reset) within `limit`.
bool closed_by_server(int fd, std::chrono::seconds limit) {
  bool timed_out = false;
  read_to_end(fd, limit, &timed_out);
  return !timed_out;
}

// Whether `fd` is still open and quiet: nothing to read and no EOF yet.
bool still_open(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

std::string base64(const std::string& bytes) {
  // OpenSSL's encoder, not the daemon's decoder's counterpart: the tests check one by the other
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string basic_header(const std::string& credentials) {
  return "Authorization: Basic " + base64(credentials) + "\r\n";
}

}  // namespace cephscope::test
