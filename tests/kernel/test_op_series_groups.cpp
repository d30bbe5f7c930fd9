// The syscall collector's series groups (bpf/op_latency.bpf.h, collectors/op_series_groups.h),
// in this process: the collector loaded into the running kernel with a filter that tracks this
// process, the targets handed to it as the daemon loop does, and pwrite64 calls counted
// exactly whether the target owns its group or another target holds it (the hash), across a
// hand-over, and from zero when a group comes round to a new owner.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "core/unique_fd.h"
#include "libbpf/features.h"
#include "libbpf/tracefs.h"

namespace cephscope {
namespace {

// Counts of cephscope_syscall_seconds by (process label, syscall label).
class CountingSink final : public MetricSink {
 public:
  std::map<std::pair<std::string, std::string>, std::uint64_t> calls;
  void counter(const std::string& /*name*/, const std::string& /*help*/, const Labels& /*labels*/,
               double /*value*/) override {}
  void gauge(const std::string& /*name*/, const std::string& /*help*/, const Labels& /*labels*/,
             double /*value*/) override {}
  void histogram(const std::string& name, const std::string& /*help*/, const Labels& labels,
                 const struct hist& h, Buckets /*buckets*/, const Exemplar* /*exemplar*/) override {
    if (name != "cephscope_syscall_seconds") {
      return;
    }
    std::string process;
    std::string syscall;
    for (const auto& [k, v] : labels) {
      if (k == "process") {
        process = v;
      } else if (k == "syscall") {
        syscall = v;
      }
    }
    calls[{process, syscall}] += hist_count(h);
  }
};

// The shared filter maps, tracking this process as TARGET.
struct Filter {
  UniqueFd tgids{bpf_map_create(BPF_MAP_TYPE_HASH, "test_tgids", sizeof(std::uint32_t),
                                sizeof(std::uint32_t), CEPHSCOPE_MAX_TRACKED, nullptr)};
  UniqueFd slots{bpf_map_create(BPF_MAP_TYPE_ARRAY, "test_slots", sizeof(std::uint32_t),
                                sizeof(std::uint64_t), CEPHSCOPE_TRACKED_SLOTS, nullptr)};
  void track(std::uint32_t target) const {
    const auto tgid = static_cast<std::uint32_t>(getpid());
    const std::uint32_t slot = tracked_slot(getpid());
    const std::uint64_t word = slot_word({{getpid(), target}});
    REQUIRE(bpf_map_update_elem(tgids.get(), &tgid, &target, BPF_ANY) == 0);
    REQUIRE(bpf_map_update_elem(slots.get(), &slot, &word, BPF_ANY) == 0);
  }
};

TargetView view(std::uint32_t id) {
  TargetView t;
  t.id = id;
  t.pids = {getpid()};
  return t;
}

void pwrites(int n) {
  const UniqueFd fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  const char byte = 'x';
  for (int i = 0; i < n; ++i) {
    REQUIRE(pwrite(fd.get(), &byte, 1, 0) == 1);
  }
}

TEST_CASE("syscall series groups: exact counts in the group, in the hash, and across a hand-over",
          "[kernel][syscall]") {
  const auto tracefs = ensure_tracefs(true);
  REQUIRE(tracefs.ok());
  const KernelFeatures features = KernelFeatures::probe(*tracefs);
  Config config;
  config.collectors.syscalls = {"pwrite64"};
  const Filter filter;
  REQUIRE(filter.tgids.get() >= 0);
  REQUIRE(filter.slots.get() >= 0);
  const CollectorContext ctx{features, config, TrackedMaps{filter.tgids.get(), filter.slots.get()},
                             *tracefs};
  auto collector = make_syscall_collector(ctx);
  REQUIRE(collector->unavailable_why().ok());

  // Target ids 5 and 69 share group 5 (OP_SERIES_GROUPS 64).
  constexpr std::uint32_t kMine = 5;
  constexpr std::uint32_t kOther = kMine + OP_SERIES_GROUPS;
  const TargetLabelMap labels = {{kMine, {{"process", "mine"}}}, {kOther, {{"process", "other"}}}};
  auto count = [&](const std::string& process) {
    CountingSink sink;
    REQUIRE(collector->scrape(sink, labels).ok());
    return sink.calls[{process, "pwrite64"}];
  };
  auto entries = [&](const std::string& map) {
    for (const auto& m : collector->maps()) {
      if (m.map == map) {
        return m.entries;
      }
    }
    FAIL("no " << map << " in the collector's maps");
    return std::size_t{0};
  };
  auto groups_owned = [&] { return entries("syscall_series"); };

  // the other target holds the group: this process's calls go to the hash
  collector->sync_targets({view(kOther), view(kMine)});
  CHECK(groups_owned() == 1);
  filter.track(kMine);
  pwrites(100);
  CHECK(count("mine") == 100);
  CHECK(count("other") == 0);
  CHECK(entries("syscall_stats") == 1);

  // the other target expires: its group goes to this one, whose counts go on from the hash's
  collector->sync_targets({view(kMine)});
  collector->prune({kMine});
  CHECK(groups_owned() == 1);
  pwrites(50);
  CHECK(count("mine") == 150);

  // this target expires too; the group comes round to a new owner at zero
  collector->sync_targets({});
  collector->prune({});
  CHECK(groups_owned() == 0);
  CHECK(count("mine") == 0);
  collector->sync_targets({view(kOther)});
  filter.track(kOther);
  pwrites(30);
  CHECK(count("other") == 30);
  CHECK(count("mine") == 0);
  CHECK(entries("syscall_stats") == 0);  // counted in the group, by index
}

}  // namespace
}  // namespace cephscope
