// Exemplars: per series, its slowest op of the latest exemplar interval, as the kernel sends
// it (a record each time a series' maximum moves; the daemon starts a new interval at each
// scrape), kept here for the exemplar that series' histograms carry. An op that a scrape
// exports is handed to the SlowOpLog once, so that its trace id resolves at
// /debug/slow-ops?trace_id= for as long as the log keeps it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include "collectors/metric_sink.h"
#include "collectors/slow_ops.h"

namespace cephscope {

// The exemplar OP gives the histogram of its whole time (STAGE empty) or of stage STAGE;
// nullopt when OP has no trace id or did not measure that stage.
std::optional<Exemplar> exemplar_of(const SlowOp& op, std::string_view stage = {});

// The new exemplar interval after INTERVAL: never 0, which tells the kernel "off".
inline std::uint32_t next_exemplar_interval(std::uint32_t interval) {
  return interval + 1 == 0 ? 1 : interval + 1;
}

// Bounded by the series: a collector erases the keys of targets that went.
template <typename Key>
class ExemplarTable {
 public:
  // Keeps OP, of kernel interval INTERVAL, for KEY when it is of another interval than the
  // one kept (intervals only move on), or slower in the same one. LOGGED: the SlowOpLog has
  // it already (a slow op's record).
  void offer(const Key& key, SlowOp op, std::uint32_t interval, bool logged) {
    std::lock_guard lock(mu_);
    auto it = kept_.find(key);
    if (it == kept_.end()) {
      kept_.emplace(key, Entry{std::move(op), interval, logged});
    } else if (it->second.interval != interval || op.seconds > it->second.op.seconds) {
      it->second = Entry{std::move(op), interval, logged};
    }
  }
  // KEY's op for this scrape, handed to LOG the first time it is exported.
  [[nodiscard]] std::optional<SlowOp> exported(const Key& key, SlowOpLog* log) {
    std::lock_guard lock(mu_);
    auto it = kept_.find(key);
    if (it == kept_.end()) {
      return std::nullopt;
    }
    if (!it->second.logged && log != nullptr) {
      log->keep(it->second.op);
      it->second.logged = true;
    }
    return it->second.op;
  }
  void erase_if(const std::function<bool(const Key&)>& gone) {
    std::lock_guard lock(mu_);
    std::erase_if(kept_, [&](const auto& kv) { return gone(kv.first); });
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mu_);
    return kept_.size();
  }

 private:
  struct Entry {
    SlowOp op;
    std::uint32_t interval;
    bool logged;
  };
  mutable std::mutex mu_;
  std::map<Key, Entry> kept_;
};

}  // namespace cephscope
