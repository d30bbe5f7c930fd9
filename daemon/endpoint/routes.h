// The endpoint's route table: app/ fills it, and serve() makes it the site the transport
// (server/http_server.h) answers each request head with, under a web config. Without a socket,
// so the whole request path past the read is tested and fuzzed as it runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "endpoint/auth_gate.h"
#include "endpoint/web_config.h"
#include "server/http_message.h"
#include "server/http_server.h"

namespace cephscope {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// The bytes on the wire: status line, headers and, unless `head_only`, the body. The
// connection is always closed after the response. Content-Length is the body's size either
// way, so a HEAD request learns what a GET would send.
std::string serialize_response(const HttpResponse& response, bool head_only);

const char* status_text(int status);

enum class Access {
  kAnyone,                   // whoever the web config's basic auth lets in
  kThisHostOrAuthenticated,  // tenant data: from this host, or behind basic_auth_users
};

struct Route {
  std::string path;                                 // exact: "/metrics"
  std::vector<std::string> methods{"GET", "HEAD"};  // others get 405 with Allow
  Access access = Access::kAnyone;
  std::function<HttpResponse(const HttpRequest&)> handle;
};

class Routes {
 public:
  Routes& add(Route route);

  // The response to one request, as bytes on the wire: basic auth first (endpoint/auth_gate.h:
  // 429 to a source past its budget of failures), then the route's access and method, then
  // its handler (an exception is a 500 with its message); gzip when the client asks for it. A
  // path no route has is a 404.
  [[nodiscard]] std::string answer(const HttpRequest& request, const WebConfig& web,
                                   const Peer& peer) const;

 private:
  [[nodiscard]] HttpResponse respond(const HttpRequest& request, const WebConfig& web,
                                     const Peer& peer) const;
  std::vector<Route> routes_;
  std::shared_ptr<AuthGate> gate_ = std::make_shared<AuthGate>();
};

// A plain-text response.
HttpResponse text_response(int status, std::string body);

// What the transport serves: WEB's TLS, and ROUTES answering under WEB's users.
Site serve(std::shared_ptr<const Routes> routes, WebConfig web);

}  // namespace cephscope
