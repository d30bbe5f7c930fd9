#include "server/http_server.h"

#include <civetweb.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstring>

namespace cephscope {
namespace {

void reply(mg_connection* conn, int status, const char* content_type, const std::string& body) {
  mg_printf(
      conn,
      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
      status, mg_get_response_code_text(conn, status), content_type, body.size());
  mg_write(conn, body.data(), body.size());
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& listen, Render metrics,
                                                      const std::atomic<bool>& ready) {
  std::unique_ptr<HttpServer> self(new HttpServer(std::move(metrics), ready));
  // Its result is the set of features initialised, none here whether or not it worked:
  // mg_start2 below reports what went wrong.
  mg_init_library(0);
  // A handful of threads: scrapes are serialised anyway, the rest answer health checks.
  std::array<const char*, 9> options = {
      "listening_ports", listen.c_str(),      "num_threads", "4",    "request_timeout_ms",
      "10000",           "enable_keep_alive", "no",          nullptr};
  mg_callbacks callbacks{};
  char error[256] = {0};
  mg_init_data init{&callbacks, nullptr, options.data()};
  mg_error_data err{};
  err.text = error;
  err.text_buffer_size = sizeof(error);
  self->ctx_ = mg_start2(&init, &err);
  if (self->ctx_ == nullptr) {
    return make_error(ErrorKind::kSystem, "cannot listen on " + listen + ": " + std::string(error));
  }
  mg_set_request_handler(self->ctx_, "/", &HttpServer::handle, self.get());
  return self;
}

HttpServer::~HttpServer() {
  if (ctx_ != nullptr) {
    mg_stop(ctx_);
  }
}

int HttpServer::handle(mg_connection* conn, void* self_ptr) {
  auto* self = static_cast<HttpServer*>(self_ptr);
  const mg_request_info* req = mg_get_request_info(conn);
  const std::string uri = req->local_uri != nullptr ? req->local_uri : "";
  if (std::strcmp(req->request_method, "GET") != 0 &&
      std::strcmp(req->request_method, "HEAD") != 0) {
    reply(conn, 405, "text/plain", "only GET\n");
    return 405;
  }
  if (uri == "/metrics") {
    try {
      reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", self->metrics_());
      return 200;
    } catch (const std::exception& e) {
      spdlog::error("scrape failed: {}", e.what());
      reply(conn, 500, "text/plain", std::string("scrape failed: ") + e.what() + "\n");
      return 500;
    }
  }
  if (uri == "/healthz") {
    reply(conn, 200, "text/plain", "ok\n");
    return 200;
  }
  if (uri == "/readyz") {
    const bool ready = self->ready_.load();
    reply(conn, ready ? 200 : 503, "text/plain",
          ready ? "ready\n" : "starting: first discovery pass not done\n");
    return ready ? 200 : 503;
  }
  if (uri == "/") {
    reply(conn, 200, "text/html",
          "<html><body><h1>cephscope</h1><a href=\"/metrics\">/metrics</a> "
          "<a href=\"/healthz\">/healthz</a> <a href=\"/readyz\">/readyz</a></body></html>\n");
    return 200;
  }
  reply(conn, 404, "text/plain", "not found\n");
  return 404;
}

}  // namespace cephscope
