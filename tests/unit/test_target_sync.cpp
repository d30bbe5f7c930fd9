#include <catch2/catch.hpp>

#include "app/target_sync.h"

using namespace cephscope;
using namespace std::chrono_literals;

namespace {

// Counts what the daemon loop hands it.
class RecordingCollector final : public Collector {
 public:
  [[nodiscard]] const char* name() const override { return "recording"; }
  [[nodiscard]] std::string hook() const override { return "none"; }
  [[nodiscard]] Cause unavailable_why() const override { return {}; }
  [[nodiscard]] std::vector<ProbeStatus> probes() const override { return {}; }
  [[nodiscard]] std::vector<MapUsage> maps() const override { return {}; }
  [[nodiscard]] std::vector<std::pair<std::string, ProgramStats>> programs() const override {
    return {};
  }
  [[nodiscard]] Result<LostCounts> lost() const override { return LostCounts{}; }
  void sync_targets(const std::vector<TargetView>& targets) override {
    ++syncs;
    last_sync = targets.size();
  }

  int syncs = 0;
  std::size_t last_sync = 0;
  std::vector<TargetIds> prunes;

 protected:
  Status collect(MetricSink& /*out*/, const TargetLabelMap& /*targets*/) override {
    return ok_status();
  }
  void prune_maps(const TargetIds& live) override { prunes.push_back(live); }
};

ProcessInfo process(pid_t pid) {
  ProcessInfo p;
  p.pid = pid;
  p.start_time = 1;
  return p;
}

TargetIdentity client(const std::string& name) {
  TargetIdentity t;
  t.kind = TargetKind::kMatched;
  t.process = name;
  return t;
}

}  // namespace

TEST_CASE("collectors get the targets only when they changed, and prune only on expiry",
          "[target_sync]") {
  TargetRegistry reg({}, 10s, 100);
  std::vector<std::unique_ptr<Collector>> collectors;
  collectors.push_back(std::make_unique<RecordingCollector>());
  auto& rec = static_cast<RecordingCollector&>(*collectors[0]);
  TargetSync sync(reg, collectors);
  const auto t0 = Clock::now();

  sync();
  CHECK(rec.syncs == 1);  // the first pass hands out even an empty set
  sync();
  CHECK(rec.syncs == 1);

  REQUIRE(reg.track(process(10), client("a"), t0).ok());
  REQUIRE(reg.track(process(20), client("b"), t0).ok());
  sync();
  sync();
  CHECK(rec.syncs == 2);
  CHECK(rec.last_sync == 2);
  CHECK(rec.prunes.empty());

  reg.forget(10, t0 + 1s);  // a's process exits: its series wait for the TTL
  sync();
  CHECK(rec.syncs == 3);
  CHECK(rec.prunes.empty());

  reg.expire(t0 + 20s);
  sync();
  CHECK(rec.syncs == 4);
  CHECK(rec.last_sync == 1);
  REQUIRE(rec.prunes.size() == 1);
  CHECK(rec.prunes[0] == TargetIds{reg.snapshot().at(0).id});
}
