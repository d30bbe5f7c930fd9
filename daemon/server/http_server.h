// The endpoint's transport: HTTP or HTTPS, serving a site (the route table of endpoint/routes.h).
//
// One event-loop thread owns every socket: it accepts, runs TLS handshakes, reads request
// heads and writes responses, all non-blocking, so a client that sends nothing, or half a
// head, or reads slowly holds a connection slot and no thread (one that sends nothing is held
// back in the kernel, TCP_DEFER_ACCEPT, for up to header_timeout before it takes one). Each
// connection has a deadline (the head must be complete within header_timeout of the accept, the
// response sent within write_timeout) and is closed when it passes. When max_connections are open,
// a new connection pushes out the one that has waited longest for its head. The work that takes CPU
// (the bcrypt check, rendering, gzip) runs on a few worker threads, so the loop never waits for a
// scrape and a health check never waits for the loop.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "server/http_message.h"

struct ssl_ctx_st;

namespace cephscope {

// Who sent a request: their address ("127.0.0.1", "::1") and whether it is this host.
struct Peer {
  std::string address;
  bool loopback = false;
};

// What a connection is served with, as it was when the connection was accepted: its TLS (null:
// plain HTTP) and the answer to each whole request head, as bytes on the wire.
struct Site {
  std::shared_ptr<ssl_ctx_st> tls;
  std::function<std::string(const HttpRequest&, const Peer&)> answer;
};

class HttpServer {
 public:
  struct Options {
    std::string listen = "0.0.0.0:9488";  // "PORT", "HOST:PORT" or "[V6]:PORT"; port 0 picks one
    std::chrono::milliseconds header_timeout{10'000};  // accept to a whole head, TLS included
    std::chrono::milliseconds write_timeout{30'000};   // to send one response
    std::size_t max_connections = 128;
    std::size_t workers = 2;  // threads that check credentials, render and compress
  };

  // Serves `site`: the workers hand its answer each whole request head.
  static Result<std::unique_ptr<HttpServer>> start(const Options& options, Site site);
  ~HttpServer();  // closes every connection; waits for a render under way
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // New connections are served `site`; the ones already open finish with theirs.
  void set_site(Site site);
  // An error once the loop thread has stopped on a failed system call: the endpoint no longer
  // answers, and the daemon should exit rather than run unseen.
  [[nodiscard]] Status status() const;
  // The port listened on (the one picked when the listen address asked for port 0).
  [[nodiscard]] Result<int> port() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cephscope
