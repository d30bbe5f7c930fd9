#include "app/endpoint_routes.h"

#include <spdlog/spdlog.h>

#include "collectors/slow_ops.h"
#include "endpoint/negotiation.h"

#include <exception>
#include <memory>

namespace cephscope {
namespace {

const char* const kIndex =
    "<html><body><h1>cephscope</h1><a href=\"/metrics\">/metrics</a> "
    "<a href=\"/healthz\">/healthz</a> <a href=\"/readyz\">/readyz</a></body></html>\n";

}  // namespace

Routes endpoint_routes(EndpointSources sources) {
  // The handlers outlive this call: they share one copy of the sources.
  const auto src = std::make_shared<const EndpointSources>(std::move(sources));
  Routes routes;
  routes.add({.path = "/metrics", .handle = [src](const HttpRequest& req) {
                try {
                  // Prometheus asks for OpenMetrics first (protobuf first with native histograms)
                  const auto format = preferred_exposition(req.header("accept").value_or(""));
                  HttpResponse r;
                  if (format == ExpositionFormat::kProtobuf && src->metrics_protobuf) {
                    r = text_response(200, src->metrics_protobuf());
                    r.content_type = kProtobufExpositionType;
                  } else if (format != ExpositionFormat::kText && src->metrics_openmetrics) {
                    r = text_response(200, src->metrics_openmetrics());
                    r.content_type = kOpenMetricsType;
                  } else {
                    r = text_response(200, src->metrics());
                    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                  }
                  r.headers.emplace_back("Vary", "Accept");
                  return r;
                } catch (const std::exception& e) {
                  spdlog::error("scrape failed: {}", e.what());
                  return text_response(500, std::string("scrape failed: ") + e.what() + "\n");
                }
              }});
  routes.add({.path = "/healthz",
              .handle = [](const HttpRequest&) { return text_response(200, "ok\n"); }});
  routes.add({.path = "/readyz", .handle = [src](const HttpRequest&) {
                return src->ready == nullptr || src->ready->load()
                           ? text_response(200, "ready\n")
                           : text_response(503, "starting: first discovery pass not done\n");
              }});
  routes.add({.path = "/", .handle = [](const HttpRequest&) {
                HttpResponse r = text_response(200, kIndex);
                r.content_type = "text/html; charset=utf-8";
                return r;
              }});
  // Object names are tenant data: for the node's own users, or behind the web config's auth.
  if (src->slow_ops) {
    routes.add({.path = "/debug/slow-ops",
                .access = Access::kThisHostOrAuthenticated,
                .handle = [src](const HttpRequest& req) {
                  const auto query = query_parameters(req.target, {"trace_id"});
                  if (!query ||
                      (query->contains("trace_id") && !is_trace_id(query->at("trace_id")))) {
                    return text_response(400, "expected nothing, or trace_id=<32 hex digits>\n");
                  }
                  std::optional<std::string> body;
                  if (!query->contains("trace_id")) {
                    body = src->slow_ops();
                  } else if (src->slow_op_trace) {
                    body = src->slow_op_trace(query->at("trace_id"));
                  }
                  if (!body) {
                    return text_response(404, "no record of that trace is kept here\n");
                  }
                  HttpResponse r = text_response(200, std::move(*body));
                  r.content_type = "application/json";
                  return r;
                }});
  }
  if (src->osd_detail) {
    routes.add({.path = "/debug/osd-detail",
                .methods = {"POST"},
                .access = Access::kThisHostOrAuthenticated,
                .handle = [src](const HttpRequest& req) {
                  if (auto len = req.header("content-length"); len && *len != "0") {
                    return text_response(400, "no body expected: the OSD goes in the query\n");
                  }
                  const auto osd = parse_osd_query(req.target);
                  if (!osd) {
                    return text_response(
                        400, "expected ceph_daemon=osd.N and, optionally, fsid=<cluster uuid>\n");
                  }
                  auto [status, body] = src->osd_detail(osd->first, osd->second);
                  return text_response(status, std::move(body));
                }});
  }
  return routes;
}

}  // namespace cephscope
