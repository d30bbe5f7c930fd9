#include "server/routes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace cephscope {
namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    out += (out.empty() ? "" : ", ") + w;
  }
  return out;
}

}  // namespace

HttpResponse text_response(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Routes& Routes::add(Route route) {
  routes_.push_back(std::move(route));
  return *this;
}

HttpResponse Routes::respond(const HttpRequest& request, const WebConfig& web,
                             bool loopback) const {
  if (!web.auth.check(request.header("authorization").value_or(""))) {
    HttpResponse r = text_response(401, "Unauthorized\n");
    r.headers.emplace_back("WWW-Authenticate", BasicAuth::kChallenge);
    return r;
  }
  const auto route = std::find_if(routes_.begin(), routes_.end(),
                                  [&](const Route& r) { return r.path == request.path; });
  if (route == routes_.end()) {
    return text_response(404, "not found\n");
  }
  if (route->access == Access::kThisHostOrAuthenticated && !web.auth.enabled() && !loopback) {
    return text_response(403, route->path + ": only from this host, or with basic_auth_users\n");
  }
  if (std::find(route->methods.begin(), route->methods.end(), request.method) ==
      route->methods.end()) {
    HttpResponse r = text_response(405, "only " + joined(route->methods) + "\n");
    r.headers.emplace_back("Allow", joined(route->methods));
    return r;
  }
  try {
    return route->handle(request);
  } catch (const std::exception& e) {
    spdlog::error("http: {}: {}", route->path, e.what());
    return text_response(500, route->path + " failed: " + e.what() + "\n");
  }
}

std::string Routes::answer(const HttpRequest& request, const WebConfig& web, bool loopback) const {
  HttpResponse r = respond(request, web, loopback);
  r.headers.emplace_back("Vary", "Accept-Encoding");
  if (!r.body.empty() && accepts_gzip(request.header("accept-encoding").value_or(""))) {
    if (auto gz = gzip_compress(r.body); gz.ok()) {
      r.body = std::move(*gz);
      r.headers.emplace_back("Content-Encoding", "gzip");
    } else {
      spdlog::warn("http: sending uncompressed: {}", gz.error().message);
    }
  }
  return serialize_response(r, request.method == "HEAD");
}

}  // namespace cephscope
