// What the daemon serves: /metrics (text, or protobuf for a scraper that prefers it),
// /healthz, /readyz, an index, and the operator's /debug/ pages, as a route table for the
// transport (server/http_server.h).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>

#include "server/routes.h"

namespace cephscope {

struct EndpointSources {
  std::function<std::string()> metrics;           // the text exposition
  std::function<std::string()> metrics_protobuf;  // unset: text for everyone
  // JSON of the last slow-op records at /debug/slow-ops (unset: 404).
  std::function<std::string()> slow_ops;
  // POST /debug/osd-detail?ceph_daemon=osd.N[&fsid=F]: the status and body of the OSD
  // collector's answer (unset: 404).
  std::function<std::pair<int, std::string>(const std::string& ceph_daemon,
                                            const std::string& fsid)>
      osd_detail;
  const std::atomic<bool>* ready = nullptr;  // /readyz: 200 once set; null: always
};

Routes endpoint_routes(EndpointSources sources);

}  // namespace cephscope
