#include "endpoint/routes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "endpoint/negotiation.h"

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

const char* status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

std::string serialize_response(const HttpResponse& response, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    status_text(response.status) + "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) {
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out += "Connection: close\r\n\r\n";
  if (!head_only) {
    out += response.body;
  }
  return out;
}

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
                             const Peer& peer) const {
  switch (gate_->check(web.auth, request.header("authorization").value_or(""), peer.address)) {
    case AuthGate::Verdict::kAllowed:
      break;
    case AuthGate::Verdict::kRefused: {
      HttpResponse r = text_response(401, "Unauthorized\n");
      r.headers.emplace_back("WWW-Authenticate", BasicAuth::kChallenge);
      return r;
    }
    case AuthGate::Verdict::kThrottled: {
      HttpResponse r = text_response(429, "too many failed logins from " + peer.address + "\n");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
  }
  const auto route = std::find_if(routes_.begin(), routes_.end(),
                                  [&](const Route& r) { return r.path == request.path; });
  if (route == routes_.end()) {
    return text_response(404, "not found\n");
  }
  if (route->access == Access::kThisHostOrAuthenticated && !web.auth.enabled() && !peer.loopback) {
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

std::string Routes::answer(const HttpRequest& request, const WebConfig& web,
                           const Peer& peer) const {
  HttpResponse r = respond(request, web, peer);
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

Site serve(std::shared_ptr<const Routes> routes, WebConfig web) {
  auto config = std::make_shared<const WebConfig>(std::move(web));
  return {
      .tls = config->tls ? std::shared_ptr<ssl_ctx_st>(config->tls, config->tls->get()) : nullptr,
      .answer = [routes = std::move(routes), config](const HttpRequest& request, const Peer& peer) {
        return routes->answer(request, *config, peer);
      }};
}

}  // namespace cephscope
