// What a hostile or stuck client does to the endpoint, on the daemon's transport
// (server/http_server.h) and on libmicrohttpd 0.9.75 (Debian's event-driven HTTP library) set
// up as the daemon would use it: the same connection cap, the closest timeout it has, one epoll
// thread. Prints figures; docs/design.md (the endpoint) keeps them and the decision.
//
//   endpoint_transports [CAP] [TIMEOUT_S]      (defaults 8 and 3)
//
// 1. slowloris: a client sends its head one byte a second; how long its connection lives.
// 2. a full endpoint: CAP idle connections, then a scraper's GET /metrics: its latency, or
//    that it was refused.
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "app/endpoint_routes.h"
#include "server/http_server.h"

namespace {

using Clock = std::chrono::steady_clock;
using cephscope::HttpServer;

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` (EOF or reset), without waiting.
bool closed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) {
    return false;
  }
  char c = 0;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

// Seconds a one-byte-a-second head stays open, up to `limit` (then "still open").
std::string slowloris(int port, int limit) {
  const int fd = connect_to(port);
  if (fd < 0) {
    return "refused";
  }
  const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: ";
  const auto t0 = Clock::now();
  for (std::size_t i = 0; Clock::now() - t0 < std::chrono::seconds(limit); ++i) {
    const char c = i < head.size() ? head[i] : 'a';
    if (send(fd, &c, 1, MSG_NOSIGNAL) != 1 || closed(fd)) {
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      close(fd);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "closed after %.1f s", s);
      return buf;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  close(fd);
  return "still open after " + std::to_string(limit) + " s";
}

// A scrape beside `cap` idle connections: its latency, or why it failed.
std::string scrape_when_full(int port, int cap) {
  std::vector<int> idle;
  idle.reserve(static_cast<std::size_t>(cap));
  for (int i = 0; i < cap; ++i) {
    idle.push_back(connect_to(port));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = Clock::now();
  std::string result;
  const int fd = connect_to(port);
  if (fd < 0) {
    result = "refused at connect";
  } else {
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    pollfd p{fd, POLLIN, 0};
    std::string got;
    char buf[4096];
    while (poll(&p, 1, 30'000) > 0) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) {
        break;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    char line[128];
    std::snprintf(line, sizeof(line), "%s after %.0f ms",
                  got.starts_with("HTTP/1.1 200") ? "answered 200" : "closed unanswered", ms);
    result = line;
    close(fd);
  }
  for (int f : idle) {
    if (f >= 0) {
      close(f);
    }
  }
  return result;
}

MHD_Result mhd_answer(void*, MHD_Connection* c, const char*, const char*, const char*, const char*,
                      size_t*, void** state) {
  if (*state == nullptr) {  // the head is in: the first call only says so
    static int marker;
    *state = &marker;
    return MHD_YES;
  }
  static const char kBody[] = "cephscope_up 1\n";
  MHD_Response* r = MHD_create_response_from_buffer(sizeof(kBody) - 1, const_cast<char*>(kBody),
                                                    MHD_RESPMEM_PERSISTENT);
  const MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  const int cap = argc > 1 ? std::atoi(argv[1]) : 8;
  const int timeout_s = argc > 2 ? std::atoi(argv[2]) : 3;
  const int limit = timeout_s * 5;

  cephscope::EndpointSources sources;
  sources.metrics = [] { return std::string("cephscope_up 1\n"); };
  HttpServer::Options options;
  options.listen = "127.0.0.1:0";
  options.header_timeout = std::chrono::seconds(timeout_s);
  options.max_connections = static_cast<std::size_t>(cap);
  auto ours = HttpServer::start(
      options, cephscope::serve(std::make_shared<const cephscope::Routes>(
                                    cephscope::endpoint_routes(std::move(sources))),
                                {}));
  if (!ours.ok()) {
    std::fprintf(stderr, "%s\n", ours.error().message.c_str());
    return 1;
  }
  const int our_port = *(*ours)->port();

  MHD_Daemon* mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr,
                                     nullptr, &mhd_answer, nullptr, MHD_OPTION_CONNECTION_LIMIT,
                                     static_cast<unsigned>(cap), MHD_OPTION_CONNECTION_TIMEOUT,
                                     static_cast<unsigned>(timeout_s), MHD_OPTION_END);
  if (mhd == nullptr) {
    std::fprintf(stderr, "libmicrohttpd did not start\n");
    return 1;
  }
  const int mhd_port = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT)->port;

  std::printf("connection cap %d, header deadline / inactivity timeout %d s\n", cap, timeout_s);
  std::printf("%-34s %-28s %s\n", "", "cephscope transport", "libmicrohttpd 0.9.75");
  std::printf("%-34s %-28s %s\n", "slowloris head (1 byte/s)", slowloris(our_port, limit).c_str(),
              slowloris(mhd_port, limit).c_str());
  std::printf("%-34s %-28s %s\n", "scrape beside CAP idle connections",
              scrape_when_full(our_port, cap).c_str(), scrape_when_full(mhd_port, cap).c_str());
  std::fflush(stdout);
  MHD_stop_daemon(mhd);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "endpoint_transports: %s\n", e.what());
  return 1;
}
