// The rados collector's plan for a client library build that carries Ceph's Objecter markers:
// both markers with readable arguments take over the send and finish stages from the
// functions; one alone, or an argument the programs cannot read, leaves the functions' plan.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/rados/rados_probes.h"

using namespace cephscope;
using namespace cephscope::profile;

namespace {

Marker marker(const std::string& name, std::uint64_t at, const std::string& spec) {
  Marker m;
  m.provider = "objecter";
  m.name = name;
  m.file_offset = at;
  m.semaphore_offset = at + 0x3000;
  m.arg_spec = spec;
  auto args = parse_marker_args(spec);
  if (args.ok()) {
    m.args = *args;
  } else {
    m.args_error = args.error().message;
  }
  return m;
}

std::vector<Marker> both_markers() {
  return {marker("objecter_send_op", 0x11ae, "8@%rdi -8@%rsi 8@%rdx -4@%ecx 8@%r8"),
          marker("objecter_finish_op", 0x11c5, "8@%rdi -4@%esi")};
}

bool has_point(const rados::BuildPlan& plan, const std::string& name) {
  return std::any_of(plan.points.begin(), plan.points.end(),
                     [&](const rados::ProbePoint& p) { return p.function == name; });
}

}  // namespace

TEST_CASE("both Objecter markers take over send and finish, with their arguments' places",
          "[unit][rados]") {
  auto plan = rados::unavailable_plan("client", {Reason::kSymbolNotFound, "function not_found"});
  const std::string used = rados::use_markers(plan, both_markers());
  CHECK(used ==
        "send and finish at markers objecter:objecter_send_op, objecter:objecter_finish_op "
        "(2 sites, no debug info needed)");
  REQUIRE(plan.points.size() == 2);
  const auto& send = plan.points[0];
  CHECK(send.function == "objecter:objecter_send_op");
  CHECK(send.program == "rados_send_marker");
  CHECK(send.probe == RADOS_MARKER_SEND);
  CHECK(send.offset == 0x11ae);
  CHECK(send.semaphore_offset == 0x41ae);
  REQUIRE(send.marker);
  CHECK(send.marker->tid.kind == USDT_KEY_REGISTER);
  CHECK(send.marker->tid.size == 8);
  CHECK(send.marker->ops.kind == USDT_KEY_REGISTER);  // argument 5: %r8
  const auto& finish = plan.points[1];
  CHECK(finish.program == "rados_finish_marker");
  REQUIRE(finish.marker);
  CHECK(finish.marker->ops.kind == USDT_KEY_THREAD);  // not read at the finish
  // the stages the markers carry are no longer unavailable; the reply still is
  REQUIRE(plan.unavailable.size() == 1);
  CHECK(plan.unavailable[0].probe == "Objecter::handle_osd_op_reply");
  CHECK(rados::plan_summary(plan).find("Objecter::_send_op") != std::string::npos);
}

TEST_CASE("one Objecter marker alone, or one the programs cannot read, is not used",
          "[unit][rados]") {
  const auto before = rados::unavailable_plan("client", {Reason::kNoDebuginfo, "no DWARF"});
  SECTION("the send alone") {
    auto plan = before;
    const auto markers = std::vector<Marker>{both_markers()[0]};
    CHECK(rados::use_markers(plan, markers) ==
          "markers not used: objecter:objecter_send_op without objecter_finish_op");
    CHECK(plan.points.empty());
    CHECK(plan.unavailable.size() == before.unavailable.size());
  }
  SECTION("an ops argument the send does not have") {
    auto plan = before;
    auto markers = both_markers();
    markers[0] = marker("objecter_send_op", 0x11ae, "8@%rdi -8@%rsi");
    CHECK(rados::use_markers(plan, markers)
              .starts_with("markers not used: objecter:objecter_send_op at 0x11ae: it has 2 "
                           "arguments, not 5"));
    CHECK(plan.points.empty());
  }
  SECTION("no marker at all says nothing") {
    auto plan = before;
    CHECK(rados::use_markers(plan, {}).empty());
    CHECK_FALSE(has_point(plan, "objecter:objecter_send_op"));
  }
}
