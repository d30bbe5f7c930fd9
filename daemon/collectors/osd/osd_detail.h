// When tier 2 (BlueStore detail) runs on an OSD under collectors.osd.detail: auto: a bounded
// window opened when the OSD itself is slow (its slow ops rise, or its tier-1 p99 over the last
// minute crosses a bound), or on an operator's request; automatic windows are rate-limited per
// OSD, and a window whose OSD is still slow at its end runs another. "Itself": a primary's ops
// that were slow waiting for a replica do not count, the replica's slow sub-ops do, so the
// window follows the slow OSD. Pure bookkeeping on the totals the collector reads: the
// collector attaches and detaches.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectors/metric_sink.h"
#include "config/config.h"
#include "core/hist.h"

namespace cephscope {

struct DetailSettings {
  std::chrono::seconds window{60};         // how long a window lasts
  std::chrono::seconds min_interval{600};  // between automatic windows of one OSD
  double p99_bound_seconds = 0.5;          // tier-1 p99 over the last minute
  std::uint64_t min_ops = 20;              // ops in that minute before its p99 counts
};

// An OSD: ceph_daemon and fsid.
using OsdId = std::pair<std::string, std::string>;

// An OSD's tier-1 totals (since its probes went in), as the collector reads them.
struct OsdTotals {
  hist ops{};          // client ops, whole
  hist replication{};  // client ops' replication stage: waiting for replicas
  hist subops{};       // replica sub-ops, whole
  // slow client ops whose longest stage was not replication, and slow sub-ops
  std::uint64_t own_slow = 0;
};

class DetailWindows {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DetailWindows(DetailSettings s) : settings_(s) {}

  // The OSD's totals at NOW: the trigger that opens a window ("slow_ops", "latency"), or
  // nothing. While a window is open, whether the OSD is still slow since the last call decides
  // if the window runs another at its end.
  std::optional<std::string> observe(const OsdId& osd, Clock::time_point now,
                                     const OsdTotals& totals);
  // An operator's request: opens a window (not rate-limited); nullopt when one is already
  // open. Returns when it ends.
  std::optional<Clock::time_point> request(const OsdId& osd, Clock::time_point now);
  // Windows that ended by NOW and whose OSD is no longer slow: closed here, to be detached by
  // the caller. One whose OSD is still slow runs another window (counted under its trigger).
  std::vector<OsdId> expire(Clock::time_point now);
  [[nodiscard]] bool active(const OsdId& osd) const;
  // Every OSD seen, with whether its window is open and windows opened so far by trigger.
  struct State {
    bool active = false;
    std::map<std::string, std::uint64_t> windows;
  };
  [[nodiscard]] std::map<OsdId, State> states() const;

  // The upper bound (seconds) of the slot holding the q-quantile of H; +Inf when in overflow.
  static double quantile_bound(const hist& h, double q);

 private:
  struct Sample {
    Clock::time_point at;
    OsdTotals totals;
  };
  struct Osd {
    std::deque<Sample> history;  // the last minute and one sample before it
    bool active = false;
    Clock::time_point until{};
    std::optional<Clock::time_point> last_auto;
    std::optional<std::string> still_slow;  // while open: the trigger of the latest interval
    std::map<std::string, std::uint64_t> windows;
  };
  void open(Osd& o, Clock::time_point now, const std::string& trigger);
  // The trigger of the totals NOW against BASE (an earlier sample), or nothing; a p99 needs
  // MIN_OPS ops in between.
  [[nodiscard]] std::optional<std::string> trigger(const Sample& base, const OsdTotals& now,
                                                   std::uint64_t min_ops) const;

  DetailSettings settings_;
  std::map<OsdId, Osd> osds_;
};

// POST /debug/osd-detail?ceph_daemon=WHO[&fsid=FSID] under MODE: the reply (status, body),
// and the OSD whose window it opened in WINDOWS, to attach; MATCHES are the OSDs attached here
// that the request names.
std::pair<std::pair<int, std::string>, std::optional<OsdId>> detail_request_reply(
    DetailMode mode, DetailWindows& windows, const std::set<OsdId>& matches, const std::string& who,
    const std::string& fsid);

// cephscope_osd_detail_active and cephscope_osd_detail_windows_total of OSDS.
void write_detail_status(MetricSink& out, DetailMode mode, const DetailWindows& windows,
                         const std::set<OsdId>& osds);

}  // namespace cephscope
