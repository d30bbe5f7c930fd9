// Hands the collectors the registry's targets, from the daemon loop and only after a change
// (the registry's generation moved): per-process probes follow the targets, and when a
// target expired its map entries are deleted here, never in a scrape, which only reads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "collectors/collector.h"
#include "discovery/registry.h"

namespace cephscope {

class TargetSync {
 public:
  TargetSync(const TargetRegistry& registry,
             const std::vector<std::unique_ptr<Collector>>& collectors)
      : registry_(registry), collectors_(collectors) {}

  // Called on every pass of the loop; does nothing while the targets stay the same.
  void operator()();

 private:
  const TargetRegistry& registry_;
  const std::vector<std::unique_ptr<Collector>>& collectors_;
  std::optional<std::uint64_t> synced_;  // the generation handed out last
  TargetIds known_;                      // the ids in that snapshot
};

}  // namespace cephscope
