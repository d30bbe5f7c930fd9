// The bluestore layer's plan for a ceph-osd build, from its bluestore-io profile: with every
// function and member it is measured; without one it is unavailable and says why; its probe
// set is its own, so the osd-stages set (and the profiles shipped for it) does not change.
#include <bpf/libbpf.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "collectors/osd/osd_bluestore.h"
#include "osd.skel.h"
#include "unit/profile_builders.h"

using namespace cephscope;
using namespace cephscope::profile;

namespace {

// Debian's 16.2.15: the offsets its DWARF gives.
Profile store_profile() {
  Profile p;
  p.source = "dwarf";
  p.object = "ceph-osd";
  p.build_id = "fb66b3cec5f264a2f863d96fa875eb4ae39bb0bf";
  std::uint64_t at = 0x1000;
  for (const auto& probe : osd::kStoreProbes) {
    FunctionInstance i;
    i.vaddr = i.file_offset = at += 0x100;
    i.size = 0x80;
    i.entry_insn = "push";
    p.functions.push_back({probe.function, ItemStatus::kOk, "", {i}});
  }
  auto member = [&](const char* type, const char* path, std::uint64_t off) {
    test::add_resolved_member(p, type, path, off);
  };
  member("ceph::buffer::v15_2_0::list", "_len", 24);
  member("IOContext", "priv", 104);
  member("BlueStore::TransContext", "ioc", 552);
  member("BlueStore::DeferredBatch", "ioc", 88);
  return p;
}

std::set<std::string> programs(const osd::StorePlan& plan) {
  std::set<std::string> out;
  for (const auto& p : plan.points) {
    out.insert(p.program);
  }
  return out;
}

}  // namespace

TEST_CASE("with every member the bluestore layer is measured from one probe per write",
          "[unit][osd]") {
  osd_layout l{};
  const auto plan = osd::plan_store(store_profile(), "osd.0", l);
  CHECK(plan.why.ok());
  CHECK(plan.unavailable.empty());
  CHECK(programs(plan) == std::set<std::string>{osd::kStoreAioWrite, osd::kStoreWrite});
  CHECK((l.have & OSD_HAVE_BS_IO) != 0);
  CHECK(l.bl_len == 24);
  CHECK(l.ioc_priv == 104);
  CHECK(l.txc_ioc == 552);
  CHECK(l.deferred_ioc == 88);
  CHECK(osd::store_gap(plan, programs(plan)).ok());
  // The synchronous writes are rare; the layer stands on the aio probe.
  CHECK(osd::store_gap(plan, {osd::kStoreAioWrite}).ok());
  const Cause gap = osd::store_gap(plan, {osd::kStoreWrite});
  CHECK(gap.reason == Reason::kProbeNotAttached);
  CHECK_THAT(gap.detail, Catch::Contains(osd::kStoreAioWrite));
}

TEST_CASE("a build without a member of the set has the bluestore layer unavailable, with why",
          "[unit][osd]") {
  auto prof = store_profile();
  for (auto& m : prof.members) {
    if (m.type == "BlueStore::DeferredBatch") {
      m.status = ItemStatus::kNotFound;
    }
  }
  osd_layout l{};
  l.have = OSD_HAVE_REQID;
  const auto plan = osd::plan_store(prof, "osd.1", l);
  CHECK(plan.points.empty());
  CHECK(plan.unavailable.size() == osd::kStoreProbes.size());
  CHECK((l.have & OSD_HAVE_BS_IO) == 0);
  CHECK(l.have == OSD_HAVE_REQID);  // the stages' members stay as they were
  const Cause gap = osd::store_gap(plan, {});
  CHECK(gap.reason == Reason::kMembersMissing);
  CHECK_THAT(gap.detail, Catch::Contains("BlueStore::DeferredBatch::ioc"));
  for (const auto& st : plan.unavailable) {
    CHECK(st.target == "osd.1");
    CHECK(st.why.reason == Reason::kMembersMissing);
  }

  // Only the symbol table: what to install goes with the reason.
  prof.source = "symtab";
  osd_layout l2{};
  const auto bare = osd::plan_store(prof, "osd.1", l2);
  CHECK(bare.why.reason == Reason::kNoDebuginfo);
  CHECK_THAT(bare.why.detail, Catch::Contains("ceph-osd-dbg") && Catch::Contains(prof.build_id));
}

TEST_CASE("a build without KernelDevice::aio_write has no bluestore layer, the symbol named",
          "[unit][osd]") {
  auto prof = store_profile();
  for (auto& f : prof.functions) {
    if (f.name == "KernelDevice::aio_write") {
      f.status = ItemStatus::kNotFound;
      f.instances.clear();
    }
  }
  osd_layout l{};
  const auto plan = osd::plan_store(prof, "osd.2", l);
  CHECK(programs(plan) == std::set<std::string>{osd::kStoreWrite});
  const Cause gap = osd::store_gap(plan, programs(plan));
  CHECK(gap.reason == Reason::kSymbolNotFound);
  // No profile at all: every probe and the layer say so.
  const auto none = osd::store_unavailable("osd.2", {Reason::kProfileUnavailable, "no profile"});
  CHECK(none.unavailable.size() == osd::kStoreProbes.size());
  CHECK(osd::store_gap(none, {}).reason == Reason::kProfileUnavailable);
}

TEST_CASE("the bluestore-io set is its own, and its table matches the object and the docs",
          "[unit][osd]") {
  const ProbeSet set = osd::store_probe_set();
  CHECK(set.name == "bluestore-io");
  CHECK(set.applies_to("ceph-osd"));
  CHECK(set.digest == probe_set_digest(set));
  auto reparsed = parse_probe_set(probe_set_to_json(set));
  REQUIRE(reparsed.ok());
  CHECK(reparsed->digest == set.digest);
  // The osd-stages set asks for none of it: its shipped profiles stay valid.
  const ProbeSet stages = osd::probe_set();
  for (const auto& f : set.functions) {
    CHECK(std::find(stages.functions.begin(), stages.functions.end(), f) == stages.functions.end());
  }

  std::unique_ptr<osd_bpf, void (*)(osd_bpf*)> skel(osd_bpf__open(), osd_bpf__destroy);
  REQUIRE(skel != nullptr);
  for (const auto& p : osd::kStoreProbes) {
    CHECK(bpf_object__find_program_by_name(skel->obj, p.program) != nullptr);
  }

  std::ifstream doc(std::string(CEPHSCOPE_SOURCE_DIR) + "/docs/collectors/osd.md");
  const std::string text{std::istreambuf_iterator<char>(doc), {}};
  const std::string begin =
      "<!-- store-probe-table: generated by `cephscope profile probes --markdown "
      "--probe-set bluestore-io` -->\n";
  const auto at = text.find(begin);
  const auto end = text.find("<!-- /store-probe-table -->", at);
  REQUIRE(at != std::string::npos);
  REQUIRE(end != std::string::npos);
  CHECK(text.substr(at + begin.size(), end - at - begin.size()) == osd::store_table_markdown());
}
