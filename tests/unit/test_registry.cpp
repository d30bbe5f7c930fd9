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
  TargetRegistry reg(-1, 10s, 100);
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
  TargetRegistry reg(-1, 10s, 100);
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
  TargetRegistry reg(-1, 10s, 100);
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
  TargetRegistry reg(-1, 10s, 2);
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
  TargetRegistry reg(-1, 10s, 100);
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
  REQUIRE(reg.track(process(101, 1), osd(0), t0).ok());
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
