// Spans out: the OTLP JSON of one op's client, primary and replica records (span ids any host
// derives alike, the span tree, stages end to end), and the exporter's batching, retries,
// bounds and drop counts with a send function standing in for the network. The real path,
// libcurl to a receiver that decodes what came, is tests/e2e/test_op_trace.cpp's.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "metrics/otlp_exporter.h"
#include "metrics/otlp_spans.h"

using namespace cephscope;
using namespace std::chrono_literals;

namespace {

constexpr const char* kTrace = "acb63b09877e4ef8a27ce62ab4ad330b";

SlowOp part(const std::string& kind, const std::string& daemon, double start, double seconds) {
  SlowOp op;
  op.kind = kind;
  op.ceph_daemon = daemon;
  op.trace_id = kTrace;
  op.request_id = "client.4177.0:12";
  op.op = "write";
  op.seconds = seconds;
  op.time_ns = static_cast<std::uint64_t>((start + seconds) * 1e9);
  return op;
}

std::string attribute(const nlohmann::json& span, const std::string& key) {
  for (const auto& a : span.value("attributes", nlohmann::json::array())) {
    if (a.at("key") == key) {
      const auto& v = a.at("value");
      return v.contains("stringValue") ? v.at("stringValue").get<std::string>()
                                       : v.at("intValue").get<std::string>();
    }
  }
  return "";
}

}  // namespace

TEST_CASE("span ids: the first 8 bytes of SHA-256 of the trace id and the part", "[otlp]") {
  // printf '%s' "acb6...330b client" | sha256sum | cut -c1-16
  CHECK(span_id(kTrace, "client") == "341f45aedf9a8bcf");
  CHECK(span_id(kTrace, "replica osd.2", "dispatch") == "e270a72dff966cc3");
  CHECK(span_id(kTrace, "osd") != span_id(kTrace, "client"));
  CHECK(span_part(part("replica", "osd.2", 0, 1)) == "replica osd.2");
  CHECK(span_part(part("osd", "osd.0", 0, 1)) == "osd");
}

TEST_CASE("one op's parts make one span tree: client, primary, replica, their stages", "[otlp]") {
  SlowOp client = part("client", "", 100.0, 0.6);
  client.process = "rados";
  client.pid = 4242;
  client.pool = 2;
  client.pg = "2.1f";
  client.object = "obj\xff";  // bytes: replaced, never passed through
  SlowOp primary = part("osd", "osd.0", 100.01, 0.55);
  primary.replicas = {"1", "2"};
  primary.stages = {{"queue", 0.05}, {"execute", 0.1}, {"replication", 0.4}};
  SlowOp replica = part("replica", "osd.2", 100.1, 0.42);
  replica.stages = {{"dispatch", 0.4}, {"commit", 0.5}};  // past the part's end: cut at it
  const auto doc = nlohmann::json::parse(otlp_json({client, primary, replica}, "node-1"));
  const auto& resources = doc.at("resourceSpans");
  REQUIRE(resources.size() == 3);
  std::map<std::string, nlohmann::json> by_id;
  std::vector<nlohmann::json> all;
  for (const auto& r : resources) {
    for (const auto& scope : r.at("scopeSpans")) {
      for (const auto& span : scope.at("spans")) {
        CHECK(span.at("traceId") == kTrace);
        by_id[span.at("spanId")] = span;
        all.push_back(span);
      }
    }
  }
  CHECK(all.size() == 3 + 3 + 2);
  const auto& root = by_id.at(span_id(kTrace, "client"));
  CHECK_FALSE(root.contains("parentSpanId"));
  CHECK(root.at("kind") == 3);  // CLIENT
  CHECK(attribute(root, "ceph.pool") == "2");
  CHECK(attribute(root, "ceph.pg") == "2.1f");
  CHECK(attribute(root, "ceph.object") == "obj\xef\xbf\xbd");
  CHECK(attribute(root, "process.pid") == "4242");
  CHECK(root.at("startTimeUnixNano") == "100000000000");
  const auto& osd = by_id.at(span_id(kTrace, "osd"));
  CHECK(osd.at("parentSpanId") == span_id(kTrace, "client"));
  CHECK(osd.at("kind") == 2);  // SERVER
  CHECK(attribute(osd, "ceph.replicas") == "osd.1,osd.2");
  CHECK(attribute(osd, "ceph.osd") == "osd.0");
  const auto& rep = by_id.at(span_id(kTrace, "replica osd.2"));
  CHECK(rep.at("parentSpanId") == span_id(kTrace, "osd"));
  // stages: children of their part, end to end from its start
  const auto& queue = by_id.at(span_id(kTrace, "osd", "queue"));
  const auto& execute = by_id.at(span_id(kTrace, "osd", "execute"));
  CHECK(queue.at("parentSpanId") == span_id(kTrace, "osd"));
  CHECK(queue.at("kind") == 1);  // INTERNAL
  CHECK(queue.at("startTimeUnixNano") == osd.at("startTimeUnixNano"));
  CHECK(queue.at("endTimeUnixNano") == execute.at("startTimeUnixNano"));
  const auto& commit = by_id.at(span_id(kTrace, "replica osd.2", "commit"));
  CHECK(commit.at("endTimeUnixNano") == rep.at("endTimeUnixNano"));
  for (const auto& r : resources) {
    CHECK(attribute(r.at("resource"), "host.name") == "node-1");
  }
}

namespace {

// A send function that records what it got and answers from a script (then kOk).
struct ScriptedSend {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> bodies;
  std::vector<SendResult> script;
  bool hold = false;  // blocks every send until released

  OtlpExporter::Send fn() {
    return [this](const std::string& body) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !hold; });
      bodies.push_back(body);
      const std::size_t n = bodies.size();
      cv.notify_all();
      return n <= script.size() ? script[n - 1] : SendResult::kOk;
    };
  }
  void release() {
    std::lock_guard lock(mu);
    hold = false;
    cv.notify_all();
  }
};

OtlpExporter::Options options(std::size_t queue, std::chrono::milliseconds backoff = 500ms) {
  return {.endpoint = "http://x",
          .queue_size = queue,
          .timeout = 1s,
          .host = "node-1",
          .first_backoff = backoff};
}

bool until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

}  // namespace

TEST_CASE("records go out in batches, each record once", "[otlp]") {
  ScriptedSend send;
  auto exporter = OtlpExporter::start(options(1000), send.fn());
  REQUIRE(exporter.ok());
  for (int i = 0; i < 300; ++i) {
    (*exporter)->offer(part("osd", "osd.0", i, 0.5));
  }
  REQUIRE(until([&] { return (*exporter)->counts().records_sent == 300; }));
  std::lock_guard lock(send.mu);
  CHECK(send.bodies.size() >= 3);  // at most kBatchRecords a request
  for (const auto& body : send.bodies) {
    CHECK(nlohmann::json::parse(body).at("resourceSpans").size() <= OtlpExporter::kBatchRecords);
  }
  CHECK((*exporter)->counts().spans_sent == 300);
}

TEST_CASE("a failed send is retried, then counted; a rejected one is not retried", "[otlp]") {
  SECTION("retried until it goes") {
    ScriptedSend send;
    send.script = {SendResult::kRetry, SendResult::kRetry};
    auto exporter = OtlpExporter::start(options(10, 10ms), send.fn());
    (*exporter)->offer(part("osd", "osd.0", 1, 0.5));
    REQUIRE(until([&] { return (*exporter)->counts().records_sent == 1; }));
    CHECK((*exporter)->counts().send_errors == 2);
  }
  SECTION("given up after kAttempts") {
    ScriptedSend send;
    send.script.assign(OtlpExporter::kAttempts, SendResult::kRetry);
    auto exporter = OtlpExporter::start(options(10, 10ms), send.fn());
    (*exporter)->offer(part("osd", "osd.0", 1, 0.5));
    REQUIRE(until([&] { return (*exporter)->counts().dropped[1] == 1; }));  // send_failed
    CHECK((*exporter)->counts().send_errors == OtlpExporter::kAttempts);
    CHECK((*exporter)->counts().records_sent == 0);
  }
  SECTION("rejected") {
    ScriptedSend send;
    send.script = {SendResult::kRejected};
    auto exporter = OtlpExporter::start(options(10, 10ms), send.fn());
    (*exporter)->offer(part("osd", "osd.0", 1, 0.5));
    REQUIRE(until([&] { return (*exporter)->counts().dropped[2] == 1; }));  // rejected
    std::lock_guard lock(send.mu);
    CHECK(send.bodies.size() == 1);
  }
}

TEST_CASE("the queue is bounded: the oldest go, counted; no trace id, no span", "[otlp]") {
  ScriptedSend send;
  send.hold = true;
  auto exporter = OtlpExporter::start(options(4), send.fn());
  (*exporter)->offer(part("osd", "osd.0", 0, 0.5));
  // the first record is taken into a batch that hangs in send; then 10 more wait
  REQUIRE(until([&] { return (*exporter)->counts().queued == 0; }));
  std::this_thread::sleep_for(50ms);
  for (int i = 1; i <= 10; ++i) {
    (*exporter)->offer(part("osd", "osd.0", i, 0.5));
  }
  SlowOp unknown = part("osd", "osd.0", 0, 0.5);
  unknown.trace_id.clear();
  (*exporter)->offer(unknown);
  auto c = (*exporter)->counts();
  CHECK(c.queued == 4);
  CHECK(c.dropped[0] == 6);  // queue_full
  CHECK(c.dropped[3] == 1);  // no_trace_id
  send.release();
  REQUIRE(until([&] { return (*exporter)->counts().records_sent == 5; }));
  // the newest four stayed: records 7..10 (start 7 s .. 10 s)
  std::lock_guard lock(send.mu);
  CHECK(send.bodies.back().find("\"startTimeUnixNano\":\"7000000000\"") != std::string::npos);
}
