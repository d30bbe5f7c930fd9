#include "app/target_sync.h"

#include <algorithm>

namespace cephscope {

void TargetSync::operator()() {
  const std::uint64_t generation = registry_.generation();
  if (generation == synced_) {
    return;
  }
  synced_ = generation;
  const auto targets = registry_.snapshot();
  TargetIds ids;
  for (const auto& t : targets) {
    ids.insert(t.id);
  }
  // Ids are never reused: one missing from the new snapshot has expired.
  const bool expired = std::any_of(known_.begin(), known_.end(),
                                   [&](std::uint32_t id) { return !ids.contains(id); });
  for (const auto& c : collectors_) {
    c->sync_targets(targets);
    if (expired) {
      c->prune(ids);
    }
  }
  known_ = std::move(ids);
}

}  // namespace cephscope
