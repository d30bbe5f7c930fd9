// Which probes and stages the OSD collector plans for a ceph-osd build, from a profile: every
// missing function or member takes out only the stages that need it, and says why.
#include <bpf/libbpf.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "collectors/osd/osd_bluestore.h"
#include "collectors/osd/osd_probes.h"
#include "osd.skel.h"
#include "unit/profile_builders.h"

using namespace cephscope;
using namespace cephscope::profile;

namespace {

// A profile with everything the collector asks for (Debian's 16.2.15 offsets), except that
// _txc_state_proc is left out unless asked: its io_done call is then not searched for.
Profile full_profile(bool with_state_proc = false) {
  Profile p;
  std::uint64_t at = 0x1000;
  for (const char* f :
       {"BlueStore::queue_transactions", "PrimaryLogPG::log_op_stats",
        "ReplicatedBackend::repop_commit", "BlueStore::_txc_aio_submit",
        "BlueStore::_txc_finish_io", "BlueStore::_txc_committed_kv",
        "BlueStore::BlueStoreThrottle::log_state_latency", "ReplicatedBackend::do_repop_reply"}) {
    FunctionInstance i;
    i.vaddr = i.file_offset = at += 0x100;
    i.size = 0x80;
    i.entry_insn = "push";
    p.functions.push_back({f, ItemStatus::kOk, "", {i}});
  }
  if (with_state_proc) {
    FunctionInstance i;
    i.vaddr = i.file_offset = 0x9000;
    i.size = 0x100;
    p.functions.push_back({"BlueStore::_txc_state_proc", ItemStatus::kOk, "", {i}});
  }
  auto member = [&](const char* type, const char* path, std::uint64_t off) {
    test::add_resolved_member(p, type, path, off);
  };
  member("OpRequest", "request", 224);
  member("OpRequest", "reqid.name._type", 232);
  member("OpRequest", "reqid.name._num", 240);
  member("OpRequest", "reqid.tid", 248);
  member("OpRequest", "op_info.rmw_flags", 192);
  member("OpRequest", "dequeued_time", 336);
  member("OpRequest", "events", 64);
  member("TrackedOp::Event", "str", 8);
  member("Message", "recv_stamp", 200);
  member("Message", "throttle_stamp", 216);
  member("Message", "recv_complete_stamp", 224);
  member("Message", "header.data_len", 54);  // 16.2.15
  member("ReplicatedBackend::RepModify", "op", 0);
  member("BlueStore::TransContext", "start", 744);
  member("BlueStore::TransContext", "last_stamp", 752);
  member("MOSDRepOpReply", "reqid.name._type", 320);
  member("MOSDRepOpReply", "reqid.name._num", 328);
  member("MOSDRepOpReply", "reqid.tid", 336);
  member("Message", "header.src.type", 60);
  member("Message", "header.src.num", 61);
  p.types.push_back({"TrackedOp::Event", ItemStatus::kOk, "", 40});
  return p;
}

void drop_function(Profile& p, const std::string& name, ItemStatus why) {
  for (auto& f : p.functions) {
    if (f.name == name) {
      f.status = why;
      f.instances.clear();
    }
  }
}

std::set<std::string> programs(const osd::BuildPlan& plan) {
  std::set<std::string> out;
  for (const auto& p : plan.points) {
    out.insert(p.program);
  }
  return out;
}

bool available(const std::array<Cause, OSD_STAGE_COUNT>& gaps, int stage) {
  return gaps.at(stage).ok();
}

// Every BlueStore stage is unavailable for REASON with WHY in its detail; every other stage
// works.
void check_only_store_stages_missing(const std::array<Cause, OSD_STAGE_COUNT>& gaps, Reason reason,
                                     const std::string& why) {
  for (int s = 0; s < OSD_STAGE_COUNT; ++s) {
    const bool store = s >= OSD_STAGE_BS_PREPARE && s <= OSD_STAGE_BS_KV_COMMIT;
    INFO(osd::kStages[s] << ": " << to_string(gaps[s].reason) << ": " << gaps[s].detail);
    CHECK(available(gaps, s) == !store);
    if (store) {
      CHECK(gaps[s].reason == reason);
      CHECK_THAT(gaps[s].detail, Catch::Contains(why));
    }
  }
}

}  // namespace

TEST_CASE("Message members too far apart for one copy are read one by one", "[unit][osd]") {
  Profile p = full_profile();
  for (auto& m : p.members) {
    if (m.path == "header.data_len") {
      m.offset = 224 + 8 - OSD_MSG_WINDOW_MAX - 1;  // one byte more than the largest window
    }
  }
  const auto near = osd::plan_for(full_profile(), "osd.0").layout;
  const auto far = osd::plan_for(p, "osd.0").layout;
  CHECK((near.have & OSD_HAVE_MSG_WINDOW) != 0);
  CHECK((far.have & OSD_HAVE_MSG_WINDOW) == 0);
  CHECK((far.have & (OSD_HAVE_STAMPS | OSD_HAVE_DATA_LEN)) ==
        (OSD_HAVE_STAMPS | OSD_HAVE_DATA_LEN));
}

TEST_CASE("without the io_done call site, io done falls back and says why", "[unit][osd]") {
  const auto plan = osd::plan_for(full_profile(), "osd.0");
  CHECK(plan.layout.have ==
        (OSD_HAVE_REQID | OSD_HAVE_STAMPS | OSD_HAVE_MSG_WINDOW | OSD_HAVE_DEQUEUED |
         OSD_HAVE_EVENTS | OSD_HAVE_RMW_FLAGS | OSD_HAVE_DATA_LEN | OSD_HAVE_TXC |
         OSD_HAVE_OP_WINDOW | OSD_HAVE_TXC_ADJACENT | OSD_HAVE_REPLY));
  CHECK(plan.layout.reply_reqid == 320);
  CHECK(plan.layout.msg_src == 60);
  // header.data_len @54 .. recv_complete_stamp @224 + 8: one copy instead of four reads
  CHECK(plan.layout.msg_window == 54);
  CHECK(plan.layout.msg_window_len == 178);
  // events @64 .. dequeued_time @336 + 8: one copy per op instead of five reads
  CHECK(plan.layout.op_window == 64);
  CHECK(plan.layout.op_window_len == 280);
  const auto progs = programs(plan);
  CHECK(progs == std::set<std::string>{"osd_txn_queued", "osd_op_done", "osd_subop_done",
                                       "osd_txc_aio_submit", "osd_txc_finish_io", "osd_txc_kv_done",
                                       "osd_repop_reply"});
  CHECK(plan.io_done.reason == Reason::kSymbolNotFound);
  CHECK_THAT(plan.io_done.detail, Catch::Contains("_txc_state_proc") &&
                                      Catch::Contains("counted in bluestore_kv_queued"));
  const auto gaps = osd::stage_gaps(plan, progs);
  for (int s = 0; s < OSD_STAGE_COUNT; ++s) {
    INFO(osd::kStages[s] << ": " << gaps[s].detail);
    CHECK(available(gaps, s) == (s != OSD_STAGE_BS_IO_DONE));
  }
  CHECK(gaps[OSD_STAGE_BS_IO_DONE].reason == plan.io_done.reason);
  CHECK(gaps[OSD_STAGE_BS_IO_DONE].detail == plan.io_done.detail);
}

TEST_CASE(
    "io done is probed on the return of its logging call, the transaction in the saved "
    "register",
    "[unit][osd]") {
  Profile p = full_profile(true);
  CallSiteEntry calls{"BlueStore::_txc_state_proc",
                      "BlueStore::BlueStoreThrottle::log_state_latency",
                      ItemStatus::kOk,
                      "",
                      {}};
  for (std::uint32_t id : {732435u, 732436u, 732437u, 732440u}) {
    calls.sites.push_back({0x9000 + id % 100, 0x9000 + id % 100, id, "r13"});
  }
  p.call_sites.push_back(calls);
  auto plan = osd::plan_for(p, "osd.0");
  CHECK(plan.io_done.ok());
  CHECK(plan.layout.io_done_txc_reg == OSD_REG_R13);
  const auto at = std::find_if(plan.points.begin(), plan.points.end(),
                               [](const auto& pt) { return pt.program == "osd_txc_io_done"; });
  REQUIRE(at != plan.points.end());
  CHECK(at->offset == 0x9000 + 37 + 5);  // the instruction after the call
  CHECK_FALSE(programs(plan).contains("osd_txc_finish_io"));

  // Without a register that keeps it, the transaction cannot be found there: the fallback.
  for (auto& site : p.call_sites.back().sites) {
    site.rsi_saved_in.reset();
  }
  plan = osd::plan_for(p, "osd.0");
  CHECK(programs(plan).contains("osd_txc_finish_io"));
  CHECK(plan.layout.io_done_txc_reg == OSD_REG_NONE);
  CHECK_THAT(plan.io_done.detail, Catch::Contains("callee-saved register"));
}

TEST_CASE("an unreadable _txc_state_proc is a reason, not a failure", "[unit][osd]") {
  const auto plan = osd::plan_for(full_profile(true), "osd.0");
  CHECK(programs(plan).contains("osd_txc_finish_io"));
  CHECK_FALSE(plan.io_done.ok());
}

TEST_CASE("an inlined log_op_stats takes out the client op stages only", "[unit][osd]") {
  auto prof = full_profile();
  drop_function(prof, "PrimaryLogPG::log_op_stats", ItemStatus::kInlinedOnly);
  const auto plan = osd::plan_for(prof, "osd.1");
  REQUIRE(plan.unavailable.size() == 1);
  CHECK(plan.unavailable[0].probe == "PrimaryLogPG::log_op_stats");
  CHECK(plan.unavailable[0].target == "osd.1");
  CHECK(plan.unavailable[0].why.reason == Reason::kSymbolNotFound);
  CHECK_THAT(plan.unavailable[0].why.detail, Catch::Contains("inlined"));
  const auto gaps = osd::stage_gaps(plan, programs(plan));
  // replicated writes on this OSD as a replica still have their stages
  CHECK(available(gaps, OSD_STAGE_QUEUE));
  CHECK(available(gaps, OSD_STAGE_BS_KV_COMMIT));
  // replication is measured at the client op's completion only
  CHECK(gaps[OSD_STAGE_REPLICATION].reason == Reason::kProbeNotAttached);
  CHECK_THAT(gaps[OSD_STAGE_REPLICATION].detail, Catch::Contains("osd_op_done not attached"));
}

TEST_CASE("a missing TransContext member takes out the BlueStore stages only", "[unit][osd]") {
  auto prof = full_profile();
  std::erase_if(prof.members, [](const MemberEntry& m) { return m.path == "last_stamp"; });
  const auto plan = osd::plan_for(prof, "osd.2");
  CHECK((plan.layout.have & OSD_HAVE_TXC) == 0);
  CHECK_THAT(plan.missing_members, Catch::Contains("BlueStore::TransContext::last_stamp"));
  const auto progs = programs(plan);
  CHECK(progs == std::set<std::string>{"osd_txn_queued", "osd_op_done", "osd_subop_done",
                                       "osd_repop_reply"});
  check_only_store_stages_missing(osd::stage_gaps(plan, progs), Reason::kMembersMissing,
                                  "last_stamp");
}

TEST_CASE("without the reply's sender only the replies' probe is left out", "[unit][osd]") {
  auto prof = full_profile();
  std::erase_if(prof.members, [](const MemberEntry& m) { return m.path == "header.src.num"; });
  const auto plan = osd::plan_for(prof, "osd.4");
  CHECK((plan.layout.have & OSD_HAVE_REPLY) == 0);
  CHECK_FALSE(programs(plan).contains("osd_repop_reply"));
  REQUIRE(plan.unavailable.size() == 1);
  CHECK(plan.unavailable[0].probe == "ReplicatedBackend::do_repop_reply");
  CHECK(plan.unavailable[0].why.reason == Reason::kMembersMissing);
  CHECK_THAT(plan.unavailable[0].why.detail, Catch::Contains("Message::header.src.num"));
  // every stage as with the members (io done: no _txc_state_proc in this profile)
  const auto gaps = osd::stage_gaps(plan, programs(plan));
  for (int s = 0; s < OSD_STAGE_COUNT; ++s) {
    INFO(osd::kStages[s] << ": " << gaps[s].detail);
    CHECK(available(gaps, s) == (s != OSD_STAGE_BS_IO_DONE));
  }
}

TEST_CASE("a build with only its symbol table says no_debuginfo and what to install",
          "[unit][osd]") {
  auto prof = full_profile();
  prof.source = "symtab";
  prof.object = "ceph-osd";
  for (auto& m : prof.members) {
    m.status = ItemStatus::kNoDebuginfo;
  }
  const auto plan = osd::plan_for(prof, "osd.3");
  CHECK(plan.members_reason == Reason::kNoDebuginfo);
  CHECK_THAT(plan.missing_members, Catch::Contains("ceph-osd-dbg") &&
                                       Catch::Contains(prof.build_id) &&
                                       Catch::Contains("cephscope profile generate"));
  for (const auto& gap : osd::stage_gaps(plan, programs(plan))) {
    CHECK(gap.reason == Reason::kNoDebuginfo);
  }
  // With DWARF, the same gap is a member this build lacks.
  prof.source = "dwarf";
  CHECK(osd::plan_for(prof, "osd.3").members_reason == Reason::kMembersMissing);
}

TEST_CASE("a probe that fails to attach is named in its stages' reasons", "[unit][osd]") {
  const auto plan = osd::plan_for(full_profile(), "osd.0");
  auto progs = programs(plan);
  progs.erase("osd_txc_kv_done");
  const auto gaps = osd::stage_gaps(plan, progs);
  CHECK(gaps[OSD_STAGE_BS_PREPARE].reason == Reason::kProbeNotAttached);
  CHECK_THAT(gaps[OSD_STAGE_BS_PREPARE].detail, Catch::Contains("osd_txc_kv_done not attached"));
  CHECK(available(gaps, OSD_STAGE_EXECUTE));
  CHECK(available(gaps, OSD_STAGE_COMMIT));
}

TEST_CASE("tier 1 alone is one probe per OSD op, and every other stage still works",
          "[unit][osd]") {
  const auto plan = osd::plan_for(full_profile(), "osd.0", false);
  const auto progs = programs(plan);
  CHECK(progs == std::set<std::string>{"osd_op_done", "osd_subop_done"});
  CHECK(plan.unavailable.empty());
  check_only_store_stages_missing(osd::stage_gaps(plan, progs), Reason::kDisabled,
                                  "collectors.osd.detail: never");
}

// The probe table is the one description of the OSD probes: the BPF object holds exactly its
// programs, the resolver's spec is derived from it, and the docs show it as generated.
TEST_CASE("the OSD probe table matches the BPF object, the spec and the docs", "[unit][osd]") {
  std::unique_ptr<osd_bpf, void (*)(osd_bpf*)> skel(osd_bpf__open(), osd_bpf__destroy);
  REQUIRE(skel != nullptr);
  std::set<std::string> in_object;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    in_object.insert(bpf_program__name(prog));
  }
  std::set<std::string> in_table;
  for (const auto& u : osd::kUprobes) {
    in_table.insert(u.program);
  }
  for (const auto& p : osd::kStoreProbes) {  // the bluestore layer's (osd_bluestore.h)
    in_table.insert(p.program);
  }
  CHECK(in_object == in_table);

  const profile::ProbeSet set = osd::probe_set();
  CHECK(set.digest == profile::probe_set_digest(set));
  auto reparsed = profile::parse_probe_set(profile::probe_set_to_json(set));
  REQUIRE(reparsed.ok());
  CHECK(reparsed->digest == set.digest);
  for (const auto& u : osd::kUprobes) {
    CHECK(std::find(set.functions.begin(), set.functions.end(), u.function) != set.functions.end());
  }
  std::size_t members = 0;
  for (const auto& t : set.types) {
    members += t.members.size();
  }
  CHECK(members == osd::kMembers.size());

  std::ifstream doc(std::string(CEPHSCOPE_SOURCE_DIR) + "/docs/collectors/osd.md");
  const std::string text{std::istreambuf_iterator<char>(doc), {}};
  const std::string begin =
      "<!-- probe-table: generated by `cephscope profile probes --markdown` -->\n";
  const auto at = text.find(begin);
  const auto end = text.find("<!-- /probe-table -->", at);
  REQUIRE(at != std::string::npos);
  REQUIRE(end != std::string::npos);
  INFO("regenerate with: cephscope profile probes --markdown");
  CHECK(text.substr(at + begin.size(), end - at - begin.size()) == osd::probe_table_markdown());
}
