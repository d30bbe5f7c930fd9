#include <catch2/catch.hpp>

#include "discovery/registry.h"

using namespace cephscope;
using namespace std::chrono_literals;

namespace {

ProcessInfo process(pid_t pid, std::uint64_t start) {
  ProcessInfo p;
  p.pid = pid;
  p.start_time = start;
  return p;
}

TargetIdentity osd(int id) {
  TargetIdentity t;
  t.kind = TargetKind::kCephOsd;
  t.ceph_daemon = "osd." + std::to_string(id);
  return t;
}

}  // namespace

TEST_CASE("a restarted OSD keeps its target id, so its series continue", "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  const auto t0 = Clock::now();
  REQUIRE(reg.track(process(100, 1), osd(0), t0).ok());
  const auto id = reg.snapshot().at(0).id;
  reg.forget(100, t0 + 1s);
  CHECK(reg.snapshot().at(0).pids.empty());
  REQUIRE(reg.track(process(200, 2), osd(0), t0 + 2s).ok());
  REQUIRE(reg.snapshot().size() == 1);
  CHECK(reg.snapshot().at(0).id == id);
  CHECK(reg.snapshot().at(0).pids == std::vector<pid_t>{200});
}

TEST_CASE("a target with no process is dropped after the TTL, and its id is not reused",
          "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  const auto t0 = Clock::now();
  REQUIRE(reg.track(process(100, 1), osd(0), t0).ok());
  const auto first = reg.snapshot().at(0).id;
  reg.reconcile({}, t0 + 1s);  // the scan no longer sees pid 100
  reg.expire(t0 + 5s);
  CHECK(reg.snapshot().size() == 1);  // within the TTL
  reg.expire(t0 + 11s);
  CHECK(reg.snapshot().empty());
  CHECK(reg.labels().empty());
  REQUIRE(reg.track(process(300, 3), osd(0), t0 + 12s).ok());
  CHECK(reg.snapshot().at(0).id != first);
}

TEST_CASE("a reused pid is a new process", "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  const auto t0 = Clock::now();
  REQUIRE(reg.track(process(100, 1), osd(0), t0).ok());
  CHECK(reg.is_tracked(100, 1));
  CHECK_FALSE(reg.is_tracked(100, 2));
  REQUIRE(reg.track(process(100, 2), osd(1), t0).ok());
  const auto snap = reg.snapshot();
  REQUIRE(snap.size() == 2);
  CHECK(snap.at(0).pids.empty());  // osd.0 lost its process
  CHECK(snap.at(1).pids == std::vector<pid_t>{100});
  CHECK(reg.tracked_processes() == 1);
}

TEST_CASE("the number of targets is capped", "[registry]") {
  TargetRegistry reg({}, 10s, 2);
  const auto t0 = Clock::now();
  REQUIRE(reg.track(process(1, 1), osd(1), t0).ok());
  REQUIRE(reg.track(process(2, 1), osd(2), t0).ok());
  auto third = reg.track(process(3, 1), osd(3), t0);
  REQUIRE_FALSE(third.ok());
  CHECK(third.error().message.find("target limit") != std::string::npos);
  REQUIRE(reg.track(process(4, 1), osd(2), t0).ok());  // an existing target still takes processes
}

TEST_CASE("targets are labelled by ceph_daemon or by process", "[registry]") {
  CHECK(target_labels(osd(3)) == Labels{{"ceph_daemon", "osd.3"}});
  TargetIdentity client;
  client.kind = TargetKind::kRadosClient;
  client.process = "rados";
  CHECK(target_labels(client) == Labels{{"process", "rados"}});
}

TEST_CASE("the generation moves with every change a snapshot shows, and only then", "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  const auto t0 = Clock::now();
  auto moved = [&reg, last = reg.generation()]() mutable {
    const bool changed = reg.generation() != last;
    last = reg.generation();
    return changed;
  };
  REQUIRE(reg.track(process(100, 1), osd(0), t0).ok());
  CHECK(moved());  // a new target
  REQUIRE(reg.track(process(100, 1), osd(0), t0).ok());
  CHECK_FALSE(moved());  // the same process again
  auto child = process(101, 1);
  child.ppid = 100;  // forked by the holder: the same daemon
  REQUIRE(reg.track(child, osd(0), t0).ok());
  CHECK(moved());  // one more process of the target
  reg.forget(101, t0 + 1s);
  CHECK(moved());
  reg.forget(101, t0 + 1s);
  CHECK_FALSE(moved());  // already forgotten
  reg.reconcile({100}, t0 + 1s);
  reg.expire(t0 + 2s);
  reg.set_ttl(5s);
  CHECK_FALSE(moved());  // nothing gone, nothing expired
  reg.reconcile({}, t0 + 3s);
  CHECK(moved());
  reg.expire(t0 + 4s);
  CHECK_FALSE(moved());  // within the TTL
  reg.expire(t0 + 9s);
  CHECK(moved());
  CHECK(reg.snapshot().empty());
}

TEST_CASE("a second live claimant of osd.N is reported, never tracked or merged", "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  const auto t0 = Clock::now();
  auto real = osd(3);
  real.fsid = "8a3e4f6c-1b2d-4c5e-9f70-1a2b3c4d5e6f";
  REQUIRE(reg.track(process(100, 1), real, t0).ok());
  CHECK(reg.conflicts().empty());

  auto fake = osd(3);
  fake.fsid = real.fsid;  // the same cluster's osd.3
  const auto gen = reg.generation();
  REQUIRE(reg.track(process(200, 5), fake, t0).ok());
  CHECK_FALSE(reg.is_tracked(200, 5));
  CHECK(reg.is_contested(200, 5));
  CHECK(reg.generation() == gen);  // no series changed
  CHECK(reg.conflicts() == std::map<std::string, std::size_t>{{"osd.3", 1}});
  REQUIRE(reg.snapshot().size() == 1);
  CHECK(reg.snapshot().at(0).pids == std::vector<pid_t>{100});
  CHECK(reg.snapshot().at(0).identity.fsid == real.fsid);  // never overwritten

  // One that names no cluster conflicts just as well.
  REQUIRE(reg.track(process(201, 6), osd(3), t0).ok());
  CHECK(reg.conflicts().at("osd.3") == 2);
  reg.forget(201, t0);
  CHECK(reg.conflicts().at("osd.3") == 1);

  SECTION("a contested claimant does not inherit osd.N when the holder exits") {
    reg.forget(100, t0 + 1s);
    REQUIRE(reg.track(process(200, 5), fake, t0 + 2s).ok());
    CHECK_FALSE(reg.is_tracked(200, 5));
    // The real OSD restarted: it continues the series, with its own fsid.
    REQUIRE(reg.track(process(300, 9), real, t0 + 3s).ok());
    CHECK(reg.is_tracked(300, 9));
    CHECK(reg.snapshot().at(0).identity.fsid == real.fsid);
  }
  SECTION("the conflict ends when the claimant exits") {
    reg.reconcile({100}, t0 + 1s);
    CHECK(reg.conflicts().empty());
    CHECK(reg.is_tracked(100, 1));
  }
  SECTION("a process forked by the holder is the holder") {
    auto child = process(150, 2);
    child.ppid = 100;
    REQUIRE(reg.track(child, real, t0).ok());
    CHECK(reg.is_tracked(150, 2));
    CHECK(reg.conflicts().at("osd.3") == 1);
  }
  SECTION("a reused pid is judged afresh") {
    reg.forget(100, t0 + 1s);
    REQUIRE(reg.track(process(200, 7), real, t0 + 2s).ok());
    CHECK(reg.is_tracked(200, 7));
  }
}

TEST_CASE("two clusters' osd.N are two targets with their own labels", "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  const auto t0 = Clock::now();
  auto first = osd(0);
  first.fsid = "8a3e4f6c-1b2d-4c5e-9f70-1a2b3c4d5e6f";
  auto second = osd(0);
  second.fsid = "5b1c0d2e-3f4a-4b5c-8d6e-7f8091a2b3c4";
  REQUIRE(reg.track(process(100, 1), first, t0).ok());
  REQUIRE(reg.track(process(200, 2), second, t0).ok());
  CHECK(reg.is_tracked(100, 1));
  CHECK(reg.is_tracked(200, 2));
  CHECK(reg.conflicts().empty());
  const auto targets = reg.snapshot();
  REQUIRE(targets.size() == 2);
  CHECK(targets[0].id != targets[1].id);
  const auto labels = reg.labels();
  CHECK(labels.at(targets[0].id) != labels.at(targets[1].id));
  CHECK(target_labels(first) == Labels{{"ceph_daemon", "osd.0"}, {"fsid", first.fsid}});
  CHECK(target_labels(osd(0)) == Labels{{"ceph_daemon", "osd.0"}});

  // Each cluster's restarted osd.0 continues its own series.
  std::map<std::string, std::uint32_t> id_of;
  for (const auto& t : targets) {
    id_of[t.identity.fsid] = t.id;
  }
  reg.forget(100, t0 + 1s);
  REQUIRE(reg.track(process(300, 3), first, t0 + 2s).ok());
  const auto again = reg.snapshot();
  REQUIRE(again.size() == 2);
  for (const auto& t : again) {
    CHECK(t.pids == std::vector<pid_t>{t.identity.fsid == first.fsid ? 300 : 200});
    CHECK(t.id == id_of.at(t.identity.fsid));
  }
}

TEST_CASE("refusals are counted by reason", "[registry]") {
  TargetRegistry reg({}, 10s, 100);
  reg.note_refusal("not_regular");
  reg.note_refusal("not_regular");
  reg.note_refusal("too_large");
  CHECK(reg.refusals() ==
        std::map<std::string, std::uint64_t>{{"not_regular", 2}, {"too_large", 1}});
}

// The filter's slot word (bpf/targets.bpf.h decodes it): the lowest pid holds the slot, with
// its target id; a second pid makes it shared.
TEST_CASE("a filter slot holds its lowest pid and says when it is shared", "[registry]") {
  CHECK(slot_word({}) == 0);
  const std::uint64_t alone = slot_word({{4196, 7}});
  CHECK(static_cast<std::uint32_t>(alone) == 4196);
  CHECK(TRACKED_SLOT_TARGET(alone) == 7);
  CHECK((alone & TRACKED_SLOT_SHARED) == 0);
  const std::uint64_t shared = slot_word({{8292, 9}, {100, 3}});
  CHECK(static_cast<std::uint32_t>(shared) == 100);
  CHECK(TRACKED_SLOT_TARGET(shared) == 3);
  CHECK((shared & TRACKED_SLOT_SHARED) != 0);
  CHECK(tracked_slot(100) == tracked_slot(100 + CEPHSCOPE_TRACKED_SLOTS));
}
