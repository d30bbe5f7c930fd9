// e2e (root, live test cluster): one slow op, end to end. A rados bench writes while one OSD
// sleeps in its dispatch for every message it takes (Ceph's own
// osd_debug_inject_dispatch_delay_*, after the message's receive stamps, so the OSD's stamps
// see the delay): the ops it serves as a replica are slow on the client, on their primary and
// on that replica. The client's, the primary's and the replica's records carry the same
// request id and trace id, and /debug/slow-ops?trace_id= joins them into one document whose
// replica part puts the time in dispatch. Exemplars in the loop: Debian's Prometheus 2.42
// with exemplar storage scrapes the daemon throughout (OpenMetrics, which it asks for first);
// the slowed replica's sub-op histogram carries exemplars whose trace ids resolve into a
// document with the client, the primary and that replica, and the OpenMetrics exposition
// passes prometheus_client's strict parser with every series of the text format. Spans out:
// the records go as OTLP spans to a receiver in the test (tests/e2e/otlp_receiver.py) that
// decodes them, and a slowed op's span tree is checked there.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rados_clients.h"

using namespace cephscope::test;
using namespace cephscope::test::rados_e2e;
using namespace std::chrono_literals;

namespace {

constexpr int kSlowOsd = 2;
constexpr double kDelaySeconds = 0.8;

// The daemon's config, its spans going to the receiver on OTLP_PORT.
std::string trace_config(int otlp_port) {
  return "log_level: info\n"
         "traces: {otlp_endpoint: \"http://127.0.0.1:" +
         std::to_string(otlp_port) +
         "/v1/traces\"}\n"
         "discovery: {scan_interval: 1s, series_ttl: 5m, ceph_osd: true, rados_clients: true}\n"
         "collectors:\n"
         "  syscall: {enabled: false}\n"
         "  vfs: {enabled: false}\n"
         "  block: {enabled: false}\n"
         "  osd: {enabled: true, detail: never, slow_op_threshold: 500ms, slow_op_records: 2000}\n"
         "  rados: {enabled: true, slow_op_threshold: 500ms}\n"
         "profiles: {shipped_dirs: [" CEPHSCOPE_SOURCE_DIR "/config/profiles]}\n";
}

// Debian's Prometheus with exemplar storage, scraping the daemon every second.
class ExemplarPrometheus {
 public:
  ExemplarPrometheus(const std::string& dir, int daemon_port) {
    std::ofstream(dir + "/prometheus.yml")
        << "global: {scrape_interval: 1s}\n"
           "scrape_configs: [{job_name: cephscope, static_configs: [{targets: ['127.0.0.1:"
        << daemon_port << "']}]}]\n";
    server_ = std::make_unique<Subprocess>(
        std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir + "/prometheus-tsdb",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--enable-feature=exemplar-storage"},
        dir + "/prometheus.log");
  }
  // GET PATH of the HTTP API with PARAMS url-encoded; its "data".
  [[nodiscard]] nlohmann::json api(
      const std::string& path,
      const std::vector<std::pair<std::string, std::string>>& params = {}) const {
    std::vector<std::string> argv = {"curl", "-sfG", "--max-time", "20",
                                     "http://127.0.0.1:" + std::to_string(port_) + path};
    for (const auto& [k, v] : params) {
      std::string param = k;
      param.append("=").append(v);
      argv.insert(argv.end(), {"--data-urlencode", param});
    }
    const auto got = run_command(argv, std::chrono::seconds(30));
    INFO(describe(argv) << ": " << got.out << got.err);
    REQUIRE(got.ok());
    return nlohmann::json::parse(got.out).at("data");
  }

 private:
  int port_ = free_port();
  std::unique_ptr<Subprocess> server_;
};

nlohmann::json get_json(const Daemon& daemon, const std::string& path, int expect = 200) {
  int status = 0;
  const auto body = http_get(daemon.port(), path, &status);
  REQUIRE(body.has_value());
  INFO(path << " -> " << *body);
  REQUIRE(status == expect);
  return expect == 200 ? nlohmann::json::parse(*body) : nlohmann::json();
}

// Spans out: once the daemon's queue is empty, what the receiver decoded holds, for some trace
// in which SLOW_OSD served a replica, one tree: the client's span the root, the primary's its
// child, SLOW_OSD's sub-op the primary's, each stage a child of its part; nothing dropped.
void check_spans(Daemon& daemon, const std::string& requests, const std::string& slow_osd) {
  REQUIRE(poll_until(
      [&] {
        const auto m = daemon.scrape();
        return m.sum("cephscope_trace_records_sent_total", {}) > 0 &&
               m.sum("cephscope_trace_queue_records", {}) == 0;
      },
      30s, 500ms));
  const auto m = daemon.scrape();
  std::printf("spans out: %.0f records, %.0f spans sent, %.0f send errors\n",
              m.sum("cephscope_trace_records_sent_total", {}),
              m.sum("cephscope_trace_spans_sent_total", {}),
              m.sum("cephscope_trace_send_errors_total", {}));
  CHECK(m.sum("cephscope_trace_records_dropped_total", {{"reason", "queue_full"}}) == 0);
  CHECK(m.sum("cephscope_trace_records_dropped_total", {{"reason", "send_failed"}}) == 0);
  CHECK(m.sum("cephscope_trace_records_dropped_total", {{"reason", "rejected"}}) == 0);

  struct Span {
    std::string parent;
    std::string name;
    int kind = 0;
    std::string service;
    std::string osd;
  };
  std::map<std::string, std::map<std::string, Span>> traces;  // trace id -> span id -> span
  std::ifstream in(requests);
  for (std::string line; std::getline(in, line);) {
    const auto request = nlohmann::json::parse(line);  // kept: the loop reads into it
    for (const auto& rs : request.at("resourceSpans")) {
      std::string service;
      std::string osd;
      for (const auto& a : rs.at("resource").at("attributes")) {
        if (a.at("key") == "service.name") {
          service = a.at("value").at("stringValue");
        } else if (a.at("key") == "service.instance.id") {
          osd = a.at("value").at("stringValue");
        }
      }
      for (const auto& scope : rs.at("scopeSpans")) {
        for (const auto& span : scope.at("spans")) {
          traces[span.at("traceId")][span.at("spanId")] = {
              span.value("parentSpanId", ""), span.at("name"), span.at("kind"), service, osd};
        }
      }
    }
  }
  int trees = 0;
  for (const auto& [trace, spans] : traces) {
    const Span* root = nullptr;
    std::string root_id;
    for (const auto& [id, span] : spans) {
      if (span.kind == 3 && span.parent.empty()) {
        root = &span;
        root_id = id;
      }
    }
    if (root == nullptr) {
      continue;
    }
    std::string primary_id;
    std::string replica_id;
    for (const auto& [id, span] : spans) {
      if (span.kind == 2 && span.parent == root_id) {
        primary_id = id;
      }
    }
    for (const auto& [id, span] : spans) {
      if (!primary_id.empty() && span.kind == 2 && span.parent == primary_id &&
          span.osd == slow_osd) {
        replica_id = id;
      }
    }
    if (primary_id.empty() || replica_id.empty()) {
      continue;
    }
    // every other span is another replica's sub-op, or a stage of a part
    bool stages_ok = true;
    int stages = 0;
    for (const auto& [id, span] : spans) {
      if (id == root_id || id == primary_id || id == replica_id ||
          (span.kind == 2 && span.parent == primary_id)) {
        continue;
      }
      ++stages;
      stages_ok = stages_ok && span.kind == 1 && spans.contains(span.parent) &&
                  spans.at(span.parent).kind != 1;
    }
    CHECK(stages_ok);
    CHECK(root->service == "rados");
    if (trees++ == 0) {
      std::printf(
          "span tree of trace %s: client %s (%s) <- osd %s <- replica %s (%s), %d stage "
          "spans\n",
          trace.c_str(), root_id.c_str(), root->name.c_str(), primary_id.c_str(),
          replica_id.c_str(), slow_osd.c_str(), stages);
    }
  }
  std::printf("%zu traces received, %d whole trees with %s's sub-op\n", traces.size(), trees,
              slow_osd.c_str());
  CHECK(trees > 0);
}

}  // namespace

TEST_CASE("a slow op's client, primary and replica records join under one trace id",
          "[e2e][ceph][rados][trace]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string dir = test_dir(cluster.dir);
  const int otlp_port = free_port();
  const std::string otlp_out = dir + "/otlp-requests.jsonl";
  Subprocess receiver({"/usr/bin/python3", CEPHSCOPE_SOURCE_DIR "/tests/e2e/otlp_receiver.py",
                       std::to_string(otlp_port), otlp_out},
                      dir + "/otlp-receiver.log");
  Daemon daemon(dir, trace_config(otlp_port));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  struct Restore {
    const ClusterInfo& cluster;
    ~Restore() { set_dispatch_delay(cluster, kSlowOsd, 0); }
  } restore{cluster};
  const ExemplarPrometheus prometheus(dir, daemon.port());
  const auto started = static_cast<double>(std::time(nullptr));

  // once the bench writes (it is held at its first connect while the probes go in)
  const HeldBench bench = held_rados_bench(cluster, daemon, dir + "/trace-bench.log", 14, [&] {
    const auto writing = poll_until(
        [&] {
          return daemon.scrape().sum("cephscope_client_op_seconds_count",
                                     {{"process", "rados"}, {"op", "write"}}) > 200;
        },
        30s, 200ms);
    REQUIRE(writing.has_value());
    REQUIRE(set_dispatch_delay(cluster, kSlowOsd, kDelaySeconds).empty());
    std::this_thread::sleep_for(4s);
    REQUIRE(set_dispatch_delay(cluster, kSlowOsd, 0).empty());
  });
  std::printf("rados bench: %llu writes\n",
              static_cast<unsigned long long>(bench.summary.total_ops));

  const auto all = get_json(daemon, "/debug/slow-ops");
  std::map<std::string, int> kinds;
  std::set<std::string> client_traces;
  for (const auto& op : all.at("ops")) {
    ++kinds[op.at("kind").get<std::string>()];
    if (op.at("kind") == "client" && op.at("trace_id").is_string()) {
      INFO(op.dump());
      const std::string rid = op.at("request_id");
      CHECK(rid.starts_with(op.at("client").get<std::string>() + ".0:"));  // librados: inc 0
      CHECK(op.at("fsid") == cluster.fsid);  // from the client's own OSD map
      client_traces.insert(op.at("trace_id").get<std::string>());
    }
  }
  std::printf("records: %d client, %d osd, %d replica; %zu client trace ids\n", kinds["client"],
              kinds["osd"], kinds["replica"], client_traces.size());
  REQUIRE_FALSE(client_traces.empty());
  // when none came: were records lost to a full ring buffer (the reader behind on a busy host)?
  INFO("osd records lost (record_full): " << daemon.scrape().sum(
           "cephscope_events_lost_total", {{"collector", "osd"}, {"reason", "record_full"}}));
  REQUIRE(kinds["replica"] > 0);

  int joined = 0;
  int in_dispatch = 0;
  for (const std::string& trace : client_traces) {
    const auto doc = get_json(daemon, "/debug/slow-ops?trace_id=" + trace);
    CHECK(doc.at("trace_id") == trace);
    const nlohmann::json* client = nullptr;
    const nlohmann::json* primary = nullptr;
    const nlohmann::json* replica = nullptr;
    for (const auto& part : doc.at("parts")) {
      CHECK(part.at("trace_id") == trace);
      if (part.at("kind") == "client") {
        client = &part;
      } else if (part.at("kind") == "osd") {
        primary = &part;
      } else if (part.at("kind") == "replica" &&
                 part.at("ceph_daemon") == "osd." + std::to_string(kSlowOsd)) {
        replica = &part;
      }
    }
    if (client == nullptr || primary == nullptr || replica == nullptr) {
      continue;
    }
    INFO(doc.dump(1));
    CHECK(client->at("request_id") == primary->at("request_id"));
    CHECK(replica->at("request_id") == primary->at("request_id"));
    CHECK(primary->at("ceph_daemon") != "osd." + std::to_string(kSlowOsd));
    // one clock: the client's op holds the primary's, which holds the replica's sub-op
    CHECK(client->at("start").get<double>() <= primary->at("start").get<double>() + 0.001);
    CHECK(primary->at("start").get<double>() <= replica->at("start").get<double>() + 0.001);
    CHECK(replica->at("time").get<double>() <= client->at("time").get<double>() + 0.001);
    // where the time went: the injected sleep is the replica's dispatch stage for the sub-op
    // that took it; the sub-ops behind it wait before their receive stamps or in the queue
    const bool slept = replica->at("stages").at("dispatch").get<double>() >= kDelaySeconds * 0.9;
    ++joined;
    if (slept && in_dispatch++ == 0) {
      std::printf("one joined document:\n%s\n", doc.dump(1).c_str());
    }
  }
  std::printf(
      "%d of %zu client trace ids joined with their primary and osd.%d's sub-op, %d of them "
      "with the replica's time in dispatch\n",
      joined, client_traces.size(), kSlowOsd, in_dispatch);
  CHECK(in_dispatch > 0);
  CHECK(joined > 0);
  get_json(daemon, "/debug/slow-ops?trace_id=00000000000000000000000000000001", 404);
  get_json(daemon, "/debug/slow-ops?trace_id=nothex", 400);

  // A few reads, for the read panels' exemplars (the bench only writes).
  REQUIRE(run_command(tool_argv(cluster, "rados",
                                {"-p", cluster.pool, "put", "exemplar-read", "/etc/hostname"}))
              .ok());
  for (int i = 0; i < 4; ++i) {
    REQUIRE(
        run_command(tool_argv(cluster, "rados", {"-p", cluster.pool, "get", "exemplar-read", "-"}))
            .ok());
  }

  // Exemplars, as Prometheus stored them from its scrapes.
  std::this_thread::sleep_for(3s);  // its last scrapes
  const auto targets = prometheus.api("/api/v1/targets").at("activeTargets");
  REQUIRE(targets.size() == 1);
  INFO(targets.dump(1));
  CHECK(targets[0].at("health") == "up");
  CHECK(targets[0].at("lastError") == "");
  const auto range = std::vector<std::pair<std::string, std::string>>{
      {"start", std::to_string(started)},
      {"end", std::to_string(static_cast<double>(std::time(nullptr)))}};
  const auto exemplars = [&](const std::string& selector) {
    auto params = range;
    params.emplace_back("query", selector);
    std::vector<std::pair<double, std::string>> out;  // value, trace id
    for (const auto& series : prometheus.api("/api/v1/query_exemplars", params)) {
      for (const auto& e : series.at("exemplars")) {
        out.emplace_back(std::stod(e.at("value").get<std::string>()),
                         e.at("labels").at("trace_id").get<std::string>());
      }
    }
    std::sort(out.rbegin(), out.rend());  // slowest first
    return out;
  };
  const std::string slow_osd = "osd." + std::to_string(kSlowOsd);
  const auto replica =
      exemplars("cephscope_osd_subop_seconds_bucket{ceph_daemon=\"" + slow_osd + "\"}");
  const auto primary = exemplars("cephscope_osd_op_seconds_bucket");
  const auto client = exemplars("cephscope_client_op_seconds_bucket");
  const auto stages = exemplars("cephscope_osd_subop_stage_seconds_bucket");
  std::printf(
      "exemplars stored: %zu on %s's sub-ops, %zu on primaries' ops, %zu on clients' ops, "
      "%zu on sub-op stages\n",
      replica.size(), slow_osd.c_str(), primary.size(), client.size(), stages.size());
  CHECK_FALSE(primary.empty());
  CHECK_FALSE(client.empty());
  CHECK_FALSE(stages.empty());
  REQUIRE_FALSE(replica.empty());
  int resolved = 0;
  int whole = 0;
  for (const auto& [value, trace] : replica) {
    int status = 0;
    const auto body = http_get(daemon.port(), "/debug/slow-ops?trace_id=" + trace, &status);
    REQUIRE(body.has_value());
    if (status != 200) {
      continue;  // its record is not kept (only ops a scrape exported are)
    }
    ++resolved;
    const auto doc = nlohmann::json::parse(*body);
    std::set<std::string> kinds;
    const nlohmann::json* part_of_replica = nullptr;
    for (const auto& part : doc.at("parts")) {
      kinds.insert(part.at("kind").get<std::string>());
      if (part.at("kind") == "replica" && part.at("ceph_daemon") == slow_osd) {
        part_of_replica = &part;
      }
    }
    if (kinds.size() == 3 && part_of_replica != nullptr &&
        part_of_replica->at("stages").contains("dispatch")) {
      if (whole++ == 0) {
        std::printf("exemplar %s (%.3f s on %s's sub-op histogram) resolves into:\n%s\n",
                    trace.c_str(), value, slow_osd.c_str(), doc.dump(1).c_str());
      }
    }
  }
  std::printf("%d of %zu exemplar trace ids on %s resolved, %d into client, primary and replica\n",
              resolved, replica.size(), slow_osd.c_str(), whole);
  CHECK(whole > 0);

  // Every dashboard query that asks Grafana for exemplars has some (variables substituted).
  for (const char* board : {"osd-latency.json", "clients.json"}) {
    std::ifstream in(std::string(CEPHSCOPE_SOURCE_DIR "/dashboards/") + board);
    const auto dashboard = nlohmann::json::parse(in);
    for (const auto& panel : dashboard.at("panels")) {
      for (const auto& target : panel.value("targets", nlohmann::json::array())) {
        if (!target.value("exemplar", false)) {
          continue;
        }
        std::string expr = target.at("expr");
        // OSDs picked by name (as a multi-select): with every OSD (.*) the stage panels read
        // recording rules, which carry no exemplars (docs/dashboards.md#exemplars)
        for (const auto& [var, value] :
             std::vector<std::pair<std::string, std::string>>{{"$cluster", ".*"},
                                                              {"$job", ".*"},
                                                              {"$instance", ".*"},
                                                              {"$fsid", ".*"},
                                                              {"$ceph_daemon", "osd.[0-9]+"}}) {
          for (auto at = expr.find(var); at != std::string::npos; at = expr.find(var)) {
            expr.replace(at, var.size(), value);
          }
        }
        for (auto at = expr.find("$__rate_interval"); at != std::string::npos;
             at = expr.find("$__rate_interval")) {
          expr.replace(at, 16, "1m");
        }
        const auto found = exemplars(expr);
        std::printf("%s / %s: %zu exemplars\n", board, panel.at("title").get<std::string>().c_str(),
                    found.size());
        CHECK_FALSE(found.empty());
      }
    }
  }

  // The OpenMetrics exposition, read strictly: every series of the text format, trace ids.
  const auto strict = run_command({"/usr/bin/python3",
                                   CEPHSCOPE_SOURCE_DIR "/tests/prometheus/openmetrics-check.py",
                                   std::to_string(daemon.port())});
  std::printf("%s", strict.out.c_str());
  INFO(strict.out << strict.err);
  CHECK(strict.ok());

  check_spans(daemon, otlp_out, slow_osd);
}
