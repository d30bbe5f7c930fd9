// The slow-op log behind /debug/slow-ops: bounded, newest first, and safe JSON from the
// bytes a client chose as its object name.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

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
