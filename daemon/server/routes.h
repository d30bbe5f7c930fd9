// The endpoint's route table: app/ fills it, the transport (server/http_server.h) hands it each
// request head with the web config and peer of its connection, and sends back the bytes.
// Without a socket, so the whole request path past the read is tested and fuzzed as it runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth_gate.h"
#include "server/http_message.h"
#include "server/web_config.h"

namespace cephscope {

enum class Access {
  kAnyone,                   // whoever the web config's basic auth lets in
  kThisHostOrAuthenticated,  // tenant data: from this host, or behind basic_auth_users
};

// Who sent a request: their address ("127.0.0.1", "::1") and whether it is this host.
struct Peer {
  std::string address;
  bool loopback = false;
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

  // The response to one request, as bytes on the wire: basic auth first (server/auth_gate.h:
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

}  // namespace cephscope
