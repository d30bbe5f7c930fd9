// e2e (root, live test cluster): one slow op, end to end. A rados bench writes while one OSD
// sleeps in its dispatch for every message it takes (Ceph's own
// osd_debug_inject_dispatch_delay_*, after the message's receive stamps, so the OSD's stamps
// see the delay): the ops it serves as a replica are slow on the client, on their primary and
// on that replica. The client's, the primary's and the replica's records carry the same
// request id and trace id, and /debug/slow-ops?trace_id= joins them into one document whose
// replica part puts the time in dispatch.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
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

std::string trace_config() {
  return "log_level: info\n"
         "discovery: {scan_interval: 1s, series_ttl: 5m, ceph_osd: true, rados_clients: true}\n"
         "collectors:\n"
         "  syscall: {enabled: false}\n"
         "  vfs: {enabled: false}\n"
         "  block: {enabled: false}\n"
         "  osd: {enabled: true, detail: never, slow_op_threshold: 500ms, slow_op_records: 2000}\n"
         "  rados: {enabled: true, slow_op_threshold: 500ms}\n"
         "profiles: {shipped_dirs: [" CEPHSCOPE_SOURCE_DIR "/config/profiles]}\n";
}

nlohmann::json get_json(const Daemon& daemon, const std::string& path, int expect = 200) {
  int status = 0;
  const auto body = http_get(daemon.port(), path, &status);
  REQUIRE(body.has_value());
  INFO(path << " -> " << *body);
  REQUIRE(status == expect);
  return expect == 200 ? nlohmann::json::parse(*body) : nlohmann::json();
}

}  // namespace

TEST_CASE("a slow op's client, primary and replica records join under one trace id",
          "[e2e][ceph][rados][trace]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, trace_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  struct Restore {
    const ClusterInfo& cluster;
    ~Restore() { set_dispatch_delay(cluster, kSlowOsd, 0); }
  } restore{cluster};

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
}
