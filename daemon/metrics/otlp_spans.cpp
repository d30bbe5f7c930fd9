#include "metrics/otlp_spans.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/build_info.h"

namespace cephscope {
namespace {

// SpanKind of opentelemetry/proto/trace/v1/trace.proto.
constexpr int kInternal = 1;
constexpr int kServer = 2;
constexpr int kClient = 3;
constexpr int kStatusError = 2;  // Status.STATUS_CODE_ERROR

nlohmann::json attribute(const std::string& key, const std::string& value) {
  return {{"key", key}, {"value", {{"stringValue", value}}}};
}

nlohmann::json attribute(const std::string& key, std::int64_t value) {
  // int64 as a decimal string: proto3's JSON mapping
  return {{"key", key}, {"value", {{"intValue", std::to_string(value)}}}};
}

std::string nanos(double seconds) {
  return std::to_string(static_cast<std::uint64_t>(seconds * 1e9));
}

// The attributes of a part: where the op was and what it was.
nlohmann::json part_attributes(const SlowOp& op) {
  nlohmann::json a = nlohmann::json::array();
  a.push_back(attribute("ceph.request_id", op.request_id));
  a.push_back(attribute("ceph.op", op.op));
  a.push_back(attribute("cephscope.slow", op.slow ? "true" : "false"));
  if (op.pool) {
    a.push_back(attribute("ceph.pool", static_cast<std::int64_t>(*op.pool)));
  }
  if (!op.pg.empty()) {
    a.push_back(attribute("ceph.pg", op.pg));
  }
  if (!op.object.empty()) {
    a.push_back(attribute("ceph.object", op.object));
  }
  if (!op.ceph_daemon.empty()) {
    a.push_back(attribute("ceph.osd", op.ceph_daemon));
  }
  std::string replicas;
  for (const auto& r : op.replicas) {
    replicas += (replicas.empty() ? "osd." : ",osd.") + r;
  }
  if (!replicas.empty()) {
    a.push_back(attribute("ceph.replicas", replicas));
  }
  if (!op.replica_commits.empty()) {
    a.push_back(attribute("ceph.last_replica", "osd." + op.replica_commits.back().first));
  }
  if (op.acting_osd) {
    a.push_back(attribute("ceph.acting_osd", "osd." + std::to_string(*op.acting_osd)));
  }
  if (op.kind == "client") {
    a.push_back(attribute("process.pid", static_cast<std::int64_t>(op.pid)));
    a.push_back(attribute("ceph.resends", static_cast<std::int64_t>(op.resends)));
    if (!op.error.empty()) {
      a.push_back(attribute("ceph.error", op.error));
    }
  }
  return a;
}

// One record's spans: its part and a child per measured stage.
nlohmann::json record_spans(const SlowOp& op) {
  const std::string part = span_part(op);
  const double end = static_cast<double>(op.time_ns) / 1e9;
  const double start = end - op.seconds;
  nlohmann::json span = {{"traceId", op.trace_id},
                         {"spanId", span_id(op.trace_id, part)},
                         {"name", (op.kind == "replica" ? std::string("replica ") : op.kind + " ") +
                                      (op.op.empty() ? "op" : op.op)},
                         {"kind", op.kind == "client" ? kClient : kServer},
                         {"startTimeUnixNano", nanos(start)},
                         {"endTimeUnixNano", std::to_string(op.time_ns)},
                         {"attributes", part_attributes(op)}};
  if (op.kind == "osd") {
    span["parentSpanId"] = span_id(op.trace_id, "client");
  } else if (op.kind == "replica") {
    span["parentSpanId"] = span_id(op.trace_id, "osd");
  }
  if (!op.error.empty()) {
    span["status"] = {{"code", kStatusError}, {"message", op.error}};
  }
  nlohmann::json spans = nlohmann::json::array({span});
  double at = start;
  for (const auto& [stage, seconds] : op.stages) {
    const double stage_end = std::min(at + seconds, end);
    spans.push_back({{"traceId", op.trace_id},
                     {"spanId", span_id(op.trace_id, part, stage)},
                     {"parentSpanId", span_id(op.trace_id, part)},
                     {"name", stage},
                     {"kind", kInternal},
                     {"startTimeUnixNano", nanos(at)},
                     {"endTimeUnixNano", nanos(stage_end)}});
    at = stage_end;
  }
  return spans;
}

}  // namespace

std::string span_id(std::string_view trace_id, std::string_view part, std::string_view stage) {
  std::string input = std::string(trace_id) + " " + std::string(part);
  if (!stage.empty()) {
    input += " " + std::string(stage);
  }
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest.data());
  std::string out;
  for (std::size_t i = 0; i < 8; ++i) {
    out += fmt::format("{:02x}", digest[i]);
  }
  return out;
}

std::string span_part(const SlowOp& op) {
  if (op.kind == "replica") {
    return "replica " + op.ceph_daemon;
  }
  return op.kind;  // "client", "osd"
}

std::string otlp_json(const std::vector<SlowOp>& records, const std::string& host) {
  nlohmann::json resources = nlohmann::json::array();
  for (const SlowOp& op : records) {
    // A resource per part: the service that did it (an OSD, or the client's process).
    const std::string service = op.kind == "client" ? op.process : "ceph-osd";
    nlohmann::json attributes =
        nlohmann::json::array({attribute("service.name", service), attribute("host.name", host)});
    if (!op.ceph_daemon.empty()) {
      attributes.push_back(attribute("service.instance.id", op.ceph_daemon));
    }
    if (!op.fsid.empty()) {
      attributes.push_back(attribute("ceph.fsid", op.fsid));
    }
    resources.push_back(
        {{"resource", {{"attributes", std::move(attributes)}}},
         {"scopeSpans", nlohmann::json::array(
                            {{{"scope", {{"name", "cephscope"}, {"version", build_info().version}}},
                              {"spans", record_spans(op)}}})}});
  }
  // object names are bytes: invalid UTF-8 is replaced, never passed through
  return nlohmann::json{{"resourceSpans", std::move(resources)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cephscope
