#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectors/process_attacher.h"

using namespace cephscope;

namespace {

// What the engine did, in order: "attach PID under TARGET" and "release PID of TARGET".
struct Journal {
  std::mutex mu;
  std::vector<std::string> events;

  void add(std::string event) {
    std::lock_guard lock(mu);
    events.push_back(std::move(event));
  }
  std::vector<std::string> wait_for(std::size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu);
        if (events.size() >= count) {
          return events;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::lock_guard lock(mu);
    return events;
  }
};

struct FakeProcess {
  std::uint32_t target = 0;
};

TargetView osd(std::uint32_t id, std::string fsid, std::vector<pid_t> pids) {
  TargetView t;
  t.id = id;
  t.identity.kind = TargetKind::kCephOsd;
  t.identity.ceph_daemon = "osd.7";
  t.identity.fsid = std::move(fsid);
  t.pids = std::move(pids);
  return t;
}

}  // namespace

TEST_CASE("a process filed under another target is released and attached under the new one",
          "[attacher]") {
  // An OSD tracked without its fsid, then again with it (its lookup returned late): the same
  // pid, a new target id. Its probes must carry the new id, or its ops count for a target
  // whose series are on their way out.
  Journal journal;
  std::mutex mu;
  ProcessAttacher<FakeProcess> attacher(mu);
  ProcessAttacher<FakeProcess>::Hooks hooks;
  hooks.attach = [&](pid_t pid, const TargetView& t, FakeProcess& p, const std::stop_token&) {
    p.target = t.id;
    journal.add("attach " + std::to_string(pid) + " under " + std::to_string(t.id));
  };
  hooks.release = [&](pid_t pid, FakeProcess& p) {
    journal.add("release " + std::to_string(pid) + " of " + std::to_string(p.target));
  };
  attacher.start(std::move(hooks));
  const auto all = [](const TargetIdentity&) { return true; };

  attacher.sync({osd(1, "", {42})}, all);
  CHECK(journal.wait_for(1) == std::vector<std::string>{"attach 42 under 1"});
  attacher.sync({osd(1, "", {42})}, all);  // nothing changed: nothing queued

  attacher.sync({osd(1, "", {}), osd(2, "8a3e4f6c-1b2d-4c5e-9f70-1a2b3c4d5e6f", {42})}, all);
  CHECK(journal.wait_for(3) ==
        std::vector<std::string>{"attach 42 under 1", "release 42 of 1", "attach 42 under 2"});
  attacher.sync({osd(2, "8a3e4f6c-1b2d-4c5e-9f70-1a2b3c4d5e6f", {42})}, all);

  attacher.sync({}, all);  // gone
  CHECK(journal.wait_for(4) == std::vector<std::string>{"attach 42 under 1", "release 42 of 1",
                                                        "attach 42 under 2", "release 42 of 2"});
  attacher.stop();  // joins the worker, which releases whatever is still attached: nothing
  CHECK(journal.events.size() == 4);
}
