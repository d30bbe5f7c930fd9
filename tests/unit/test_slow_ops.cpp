// The slow-op log behind /debug/slow-ops: bounded, newest first, and safe JSON from the
// bytes a client chose as its object name.
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectors/osd/osd_records.h"
#include "collectors/rados/rados_probes.h"
#include "collectors/rados/rados_records.h"
#include "collectors/slow_ops.h"
#include "profile/profile_json.h"

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
  CHECK(j["ops"][0]["replica_commits"] == nlohmann::json::array());  // tier 1: none
  CHECK(j["ops"][0]["last_replica"].is_null());
}

TEST_CASE("tier 2's replica replies: in the order taken, the last one named", "[unit][slow_ops]") {
  SlowOpLog log(1);
  SlowOp op = op_named("obj", 1);
  op.replica_commits = {{"1", 0.002}, {"2", 1.45}, {"3", std::nullopt}};
  log.add(std::move(op));
  const auto j = nlohmann::json::parse(log.json())["ops"][0];
  CHECK(j["last_replica"] == "3");
  REQUIRE(j["replica_commits"].size() == 3);
  CHECK(j["replica_commits"][0] == nlohmann::json({{"osd", "1"}, {"seconds", 0.002}}));
  CHECK(j["replica_commits"][1] == nlohmann::json({{"osd", "2"}, {"seconds", 1.45}}));
  CHECK(j["replica_commits"][2]["seconds"].is_null());  // not known: null, never 0
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
  CHECK(op.replica_commits.empty());  // tier 1: no replies taken
  r.have_pg = 0;
  CHECK(to_slow_op(r, "osd.0", "fsid").pg.empty());

  // tier 2: the kernel's ring holds the last OSD_REPLIES_KEPT replies, reply k at k % KEPT
  r.replies = 2;
  r.reply_osd[0] = 1;
  r.reply_after_ns[0] = 2'000'000;
  r.reply_osd[1] = 2;
  r.reply_after_ns[1] = 1'950'000'000;
  CHECK(to_slow_op(r, "osd.0", "fsid").replica_commits ==
        std::vector<std::pair<std::string, std::optional<double>>>{{"1", 0.002}, {"2", 1.95}});
  r.reply_after_ns[1] = 0;  // the op's start unknown: no time, not 0 s
  CHECK(to_slow_op(r, "osd.0", "fsid").replica_commits.back().second == std::nullopt);
  r.replies = OSD_REPLIES_KEPT + 2;  // six replies: 2..5 kept, at slots 2, 3, 0, 1
  for (std::uint32_t k = 0; k < OSD_REPLIES_KEPT; ++k) {
    r.reply_osd[k] = static_cast<std::int32_t>(10 + k);
    r.reply_after_ns[k] = 1'000'000ULL * (k + 1);
  }
  const auto kept = to_slow_op(r, "osd.0", "fsid").replica_commits;
  REQUIRE(kept.size() == OSD_REPLIES_KEPT);
  CHECK(kept.front().first == "12");
  CHECK(kept.back() == std::pair<std::string, std::optional<double>>{"11", 0.002});
}

TEST_CASE("request ids as Ceph prints them, trace ids as documented", "[unit][slow_ops]") {
  CHECK(request_id(8, 4177, 0, 12) == "client.4177.0:12");
  CHECK(request_id(4, 3, 1, 7) == "osd.3.1:7");
  CHECK(request_id(0x10, 14123, -1, 1) == "mgr.14123.-1:1");
  CHECK(request_id(0x20, 1, 0, 1).empty());  // a type Ceph does not name: no id claimed
  // printf '%s' "<fsid> <request id>" | sha256sum | cut -c1-32 (docs/collectors/osd.md)
  const std::string fsid = "0b8a7c5e-1f2d-4e3a-9b6c-7d8e9fa0b1c2";
  CHECK(trace_id(fsid, "client.4177.0:12") == "acb63b09877e4ef8a27ce62ab4ad330b");
  CHECK(trace_id("0B8A7C5E-1F2D-4E3A-9B6C-7D8E9FA0B1C2", "client.4177.0:12") ==
        "acb63b09877e4ef8a27ce62ab4ad330b");  // the fsid's case does not matter
  CHECK(trace_id(fsid, "client.4177.0:13") != trace_id(fsid, "client.4177.0:12"));
  CHECK(trace_id("", "client.4177.0:12").empty());  // the client has no OSD map yet
  CHECK(trace_id(fsid, "").empty());
  CHECK(is_trace_id("acb63b09877e4ef8a27ce62ab4ad330b"));
  CHECK_FALSE(is_trace_id("ACB63B09877E4EF8A27CE62AB4AD330B"));
  CHECK_FALSE(is_trace_id("acb63b09877e4ef8a27ce62ab4ad330"));
  CHECK_FALSE(is_trace_id("acb63b09877e4ef8a27ce62ab4ad330g"));
  const std::uint8_t bytes[16] = {0x0b, 0x8a, 0x7c, 0x5e, 0x1f, 0x2d, 0x4e, 0x3a,
                                  0x9b, 0x6c, 0x7d, 0x8e, 0x9f, 0xa0, 0xb1, 0xc2};
  CHECK(uuid_text(bytes) == fsid);
  const std::uint8_t zero[16] = {};
  CHECK(uuid_text(zero).empty());
}

TEST_CASE("an OSD record's request id needs its incarnation; a replica's record is its own kind",
          "[unit][slow_ops]") {
  osd_slow_record r{};
  r.name_type = 8;
  r.client = 4177;
  r.tid = 12;
  r.have_reqid = 1;
  const std::string fsid = "0b8a7c5e-1f2d-4e3a-9b6c-7d8e9fa0b1c2";
  CHECK(to_slow_op(r, "osd.0", fsid).request_id.empty());  // a profile without reqid.inc
  r.have_inc = 1;
  const SlowOp primary = to_slow_op(r, "osd.0", fsid);
  CHECK(primary.kind == "osd");
  CHECK(primary.request_id == "client.4177.0:12");
  CHECK(primary.trace_id == "acb63b09877e4ef8a27ce62ab4ad330b");
  r.kind = OSD_RECORD_REPLICA;
  const SlowOp replica = to_slow_op(r, "osd.2", fsid);
  CHECK(replica.kind == "replica");
  CHECK(replica.trace_id == primary.trace_id);         // the sub-op carries its client's request id
  CHECK(to_slow_op(r, "osd.2", "").trace_id.empty());  // the OSD's cluster not known
}

TEST_CASE("the parts of one trace, oldest start first, on one clock", "[unit][slow_ops]") {
  SlowOpLog log(8);
  auto part = [](const std::string& kind, std::uint64_t end_ns, double seconds,
                 const std::string& trace) {
    SlowOp op = op_named("obj", 12);
    op.kind = kind;
    op.time_ns = end_ns;
    op.seconds = seconds;
    op.trace_id = trace;
    return op;
  };
  const std::string t = "acb63b09877e4ef8a27ce62ab4ad330b";
  log.add(part("replica", 10'400'000'000, 0.3, t));  // 10.1 .. 10.4
  log.add(part("osd", 10'500'000'000, 0.45, t));     // 10.05 .. 10.5
  log.add(part("osd", 11'000'000'000, 0.5, "0123456789abcdef0123456789abcdef"));
  log.add(part("client", 10'520'000'000, 0.5, t));  // 10.02 .. 10.52
  log.add(part("osd", 12'000'000'000, 0.5, ""));    // no trace id: never matched
  const auto doc = log.trace_json(t);
  REQUIRE(doc.has_value());
  const auto j = nlohmann::json::parse(*doc);
  CHECK(j["trace_id"] == t);
  REQUIRE(j["parts"].size() == 3);
  CHECK(j["parts"][0]["kind"] == "client");
  CHECK(j["parts"][1]["kind"] == "osd");
  CHECK(j["parts"][2]["kind"] == "replica");
  CHECK(j["parts"][2]["start"].get<double>() == Approx(10.1));
  CHECK(j["parts"][2]["time"].get<double>() == Approx(10.4));
  CHECK_FALSE(log.trace_json("ffffffffffffffffffffffffffffffff").has_value());
  CHECK_FALSE(log.trace_json("").has_value());
  // the list names each record's trace id, null where there is none
  const auto all = nlohmann::json::parse(log.json());
  CHECK(all["ops"][0]["trace_id"].is_null());
  CHECK(all["ops"][1]["trace_id"] == t);
}

TEST_CASE("a client record: request id and trace id only from what the kernel read",
          "[unit][slow_ops]") {
  rados_slow_record r{};
  r.tgid = 4242;
  r.op = RADOS_OP_WRITE;
  r.tid = 12;
  r.pool = 2;
  r.whole_ns = 1'500'000'000;
  r.gid = 4177;
  r.have_reqid = RADOS_REQID_GID;  // no incarnation read: no id claimed
  CHECK(rados::to_slow_op(r, "rados").request_id.empty());
  r.have_reqid |= RADOS_REQID_INC;
  const SlowOp no_map = rados::to_slow_op(r, "rados");
  CHECK(no_map.kind == "client");
  CHECK(no_map.client == "client.4177");
  CHECK(no_map.request_id == "client.4177.0:12");
  CHECK(no_map.fsid.empty());      // no OSD map yet
  CHECK(no_map.trace_id.empty());  // so no trace id
  const std::uint8_t fsid[16] = {0x0b, 0x8a, 0x7c, 0x5e, 0x1f, 0x2d, 0x4e, 0x3a,
                                 0x9b, 0x6c, 0x7d, 0x8e, 0x9f, 0xa0, 0xb1, 0xc2};
  std::memcpy(r.fsid, fsid, sizeof(fsid));
  r.have_reqid |= RADOS_REQID_FSID;
  const SlowOp op = rados::to_slow_op(r, "rados");
  CHECK(op.fsid == "0b8a7c5e-1f2d-4e3a-9b6c-7d8e9fa0b1c2");
  CHECK(op.trace_id == "acb63b09877e4ef8a27ce62ab4ad330b");  // as the OSDs derive it
  CHECK(op.pool == 2);
  CHECK(op.seconds == 1.5);
  r.pool = RADOS_POOL_UNKNOWN;  // a marker build's op
  CHECK_FALSE(rados::to_slow_op(r, "rados").pool.has_value());
}

// Each shipped client library build takes one route to the global id; the other route's
// members, and librbd's copy lacking both, are not reported as missing members.
TEST_CASE("the shipped librados builds: request-id routes, nothing reported missing",
          "[unit][slow_ops]") {
  const std::string dir = std::string(CEPHSCOPE_SOURCE_DIR) + "/config/profiles/";
  struct Build {
    const char* file;
    std::uint32_t route;  // RADOS_HAVE_GID_*, 0: none (sends only)
  };
  for (const Build& b : {Build{"fb8e9106466bbf700643c6e5a6d285bb2fd1d491", RADOS_HAVE_GID_RC},
                         Build{"db58d5e5bd1ed353110ae4b19ba270c188a27e8b", RADOS_HAVE_GID_RC},
                         Build{"0682b21936551fc1c4a8e12968e3d4d83964d25e", RADOS_HAVE_GID_MONC},
                         Build{"b4aaeac9d3ede85f6daa9723c7399c514e6945ea", 0U}}) {
    INFO(b.file);
    auto prof = profile::load_profile(dir + b.file + ".librados.json");
    REQUIRE(prof.ok());
    const auto plan = rados::plan_for(*prof, "test");
    CHECK((plan.layout.have & (RADOS_HAVE_GID_RC | RADOS_HAVE_GID_MONC)) == b.route);
    if (b.route != 0) {
      CHECK((plan.layout.have & RADOS_HAVE_INC) != 0);
      CHECK((plan.layout.have & RADOS_HAVE_FSID) != 0);
    }
    CHECK(plan.missing_members.empty());
  }
}
