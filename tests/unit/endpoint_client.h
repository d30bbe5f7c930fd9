// The endpoint tests' side of the wire: raw sockets to a server on a port of its own, as a
// scraper, a slow client or an attacker talks to it (tests/unit/test_endpoint*.cpp).
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "app/endpoint_routes.h"
#include "server/http_server.h"

namespace cephscope::test {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0);

// 3,000 lines of a fake counter: the body every test server serves at /metrics.
const std::string& fake_metrics();

// The machine's first IPv4 address that is not loopback, when it has one.
std::optional<in_addr> own_address();

// A connection to 127.0.0.1:PORT, from SOURCE (an address of this host, say 127.0.0.2) when
// given; RCVBUF sets the receive buffer when above 0.
int connect_local(int port, int rcvbuf = 0, const char* source = nullptr);
void set_recv_timeout(int fd, std::chrono::seconds t);
void send_all(int fd, const std::string& data);
// Everything until the server closes; `timed_out` when it had not closed after `limit`.
std::string read_to_end(int fd, std::chrono::seconds limit, bool* timed_out = nullptr);
// Whether the server has closed `fd` (EOF or reset) within `limit`.
bool closed_by_server(int fd, std::chrono::seconds limit);
// Whether `fd` is still open and quiet: nothing to read and no EOF yet.
bool still_open(int fd);

struct Reply {
  int status = 0;                              // 0: no HTTP response
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};
Reply parse_reply(const std::string& raw);

// One request on its own connection, as a scraper sends it.
Reply ask(int port, const std::string& request, const char* source = nullptr);
// One request to ADDR:PORT on its own connection: the raw answer.
std::string ask_at(in_addr addr, int port, const std::string& request);

std::string request(const std::string& method, const std::string& path,
                    const std::string& extra_headers = "");
// Base64 by OpenSSL's encoder, and the Authorization header line of basic auth with it.
std::string base64(const std::string& bytes);
std::string basic_header(const std::string& credentials);

// The half of a request head a slow client sends before it stops.
inline const std::string kHalfHead = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slo";

// A server on 127.0.0.1 on a port of its own, serving fake_metrics().
struct Served {
  std::atomic<bool> ready{true};
  std::shared_ptr<const Routes> routes;  // a reload serves them under a new web config
  std::unique_ptr<HttpServer> server;
  int port = 0;

  // `sources` gives the /debug/ pages; its metrics are `render`.
  explicit Served(
      HttpServer::Options options = {}, WebConfig web = {},
      std::function<std::string()> render = [] { return fake_metrics(); },
      const std::string& listen = "127.0.0.1:0", EndpointSources sources = {});
};

}  // namespace cephscope::test
