// /metrics, /healthz and /readyz over HTTP (civetweb, as prometheus-cpp uses).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"

struct mg_context;
struct mg_connection;

namespace cephscope {

class HttpServer {
 public:
  using Render = std::function<std::string()>;

  // listen: "PORT" or "HOST:PORT".
  static Result<std::unique_ptr<HttpServer>> start(const std::string& listen, Render metrics,
                                                   const std::atomic<bool>& ready);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

 private:
  HttpServer(Render metrics, const std::atomic<bool>& ready)
      : metrics_(std::move(metrics)), ready_(ready) {}
  static int handle(::mg_connection* conn, void* self);

  Render metrics_;
  const std::atomic<bool>& ready_;
  mg_context* ctx_ = nullptr;
};

}  // namespace cephscope
