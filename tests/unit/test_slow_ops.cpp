// The slow-op log behind /debug/slow-ops: bounded, newest first, and safe JSON from the
// bytes a client chose as its object name.
#include <catch2/catch.hpp>

#include <cstring>

#include <nlohmann/json.hpp>

#include "collectors/osd_records.h"
#include "collectors/slow_ops.h"

using namespace cephscope;

namespace {

SlowOp op_named(const std::string& object, std::uint64_t tid) {
  SlowOp op;
  op.ceph_daemon = "osd.0";
  op.op = "write";
  op.client = "client.4177";
  op.tid = tid;
  op.pool = 2;
  op.pg = "2.1f";
  op.object = object;
  op.replicas = {"1", "2"};
  op.seconds = 1.5;
  op.stages = {{"queue", 0.001}, {"replication", 1.4}};
  return op;
}

}  // namespace

TEST_CASE("the slow-op log keeps the newest records up to its capacity", "[unit][slow_ops]") {
  SlowOpLog log(2);
  for (std::uint64_t tid = 1; tid <= 5; ++tid) {
    log.add(op_named("obj" + std::to_string(tid), tid));
  }
  const auto j = nlohmann::json::parse(log.json());
  CHECK(j["capacity"] == 2);
  CHECK(j["recorded"] == 5);
  REQUIRE(j["ops"].size() == 2);
  CHECK(j["ops"][0]["tid"] == 5);
  CHECK(j["ops"][1]["tid"] == 4);
  CHECK(j["ops"][0]["pg"] == "2.1f");
  CHECK(j["ops"][0]["pool"] == 2);
  CHECK(j["ops"][0]["replicas"] == nlohmann::json::array({"1", "2"}));
  CHECK(j["ops"][0]["stages"]["replication"] == 1.4);
}

TEST_CASE("object names of any bytes give valid JSON", "[unit][slow_ops]") {
  SlowOpLog log(4);
  log.add(op_named(std::string("a\"b\\c\n\x01\xff\xfe", 9), 1));
  const std::string text = log.json();
  const auto j = nlohmann::json::parse(text);  // throws on invalid JSON or UTF-8
  const std::string name = j["ops"][0]["object"];
  CHECK(name.starts_with("a\"b\\c\n\x01"));
  CHECK(name.find('\xff') == std::string::npos);  // replaced, not passed through
}

TEST_CASE("the replicas of a waiting-for-subops event", "[unit][slow_ops]") {
  CHECK(replicas_of("waiting for subops from 1,2") == std::vector<std::string>{"1", "2"});
  CHECK(replicas_of("waiting for subops from 0(1),2(0)") == std::vector<std::string>{"0", "2"});
  CHECK(replicas_of("waiting for subops from 17") == std::vector<std::string>{"17"});
  CHECK(replicas_of("waiting for subops from ").empty());
  CHECK(replicas_of("sub_op_commit_rec").empty());
  CHECK(replicas_of("waiting for subops from x,,99999999999").empty());
}

TEST_CASE("a kernel record becomes a slow op: client, pg, object, stages", "[unit][slow_ops]") {
  osd_slow_record r{};
  r.time_ns = 1'764'000'000'000'000'000ULL;
  r.whole_ns = 2'000'000'000;
  r.stage_ns[OSD_STAGE_QUEUE] = 1'000'000;
  r.stage_ns[OSD_STAGE_REPLICATION] = 1'900'000'000;
  r.known = (1U << OSD_STAGE_QUEUE) | (1U << OSD_STAGE_REPLICATION);
  r.op = OSD_OP_WRITE;
  r.name_type = 8;
  r.client = 4177;
  r.tid = 42;
  r.pool = 2;
  r.pg_seed = 0x1f;
  r.have_pg = 1;
  const std::string name = "benchmark_data_host_1_object41";
  std::memcpy(r.object, name.data(), name.size());
  r.object_len = 200;  // longer than what the probe read
  const std::string event = "waiting for subops from 1,2";
  std::memcpy(r.replicas, event.data(), event.size());
  const SlowOp op = to_slow_op(r, "osd.0", "fsid");
  CHECK(op.client == "client.4177");
  CHECK(op.tid == 42);
  CHECK(op.op == "write");
  CHECK(op.pg == "2.1f");
  CHECK(op.pool == 2);
  CHECK(op.object == name);
  CHECK(op.object_truncated);
  CHECK(op.replicas == std::vector<std::string>{"1", "2"});
  CHECK(op.seconds == 2.0);
  REQUIRE(op.stages.size() == 2);
  CHECK(op.stages[0].first == "queue");
  CHECK(op.stages[1] == std::pair<std::string, double>{"replication", 1.9});
  r.have_pg = 0;
  CHECK(to_slow_op(r, "osd.0", "fsid").pg.empty());
}
