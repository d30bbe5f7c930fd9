// What the daemon serves: /metrics (text, or OpenMetrics or protobuf for a scraper that
// prefers it), /healthz, /readyz, an index, and the operator's /debug/ pages, as a route
// table for the transport (server/http_server.h).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "endpoint/routes.h"

namespace cephscope {

struct EndpointSources {
  std::function<std::string()> metrics;              // the text exposition
  std::function<std::string()> metrics_protobuf;     // unset: text for everyone
  std::function<std::string()> metrics_openmetrics;  // unset: text for everyone
  // JSON of the last slow-op records at /debug/slow-ops (unset: 404), and of the records of
  // one trace at /debug/slow-ops?trace_id=T (nullopt: none kept).
  std::function<std::string()> slow_ops;
  std::function<std::optional<std::string>(std::string_view trace)> slow_op_trace;
  // POST /debug/osd-detail?ceph_daemon=osd.N[&fsid=F]: the status and body of the OSD
  // collector's answer (unset: 404).
  std::function<std::pair<int, std::string>(const std::string& ceph_daemon,
                                            const std::string& fsid)>
      osd_detail;
  const std::atomic<bool>* ready = nullptr;  // /readyz: 200 once set; null: always
};

Routes endpoint_routes(EndpointSources sources);

}  // namespace cephscope
