// When tier 2 (BlueStore detail) runs on an OSD under collectors.osd.detail: auto: a bounded
// window opened when the OSD's slow ops rise, when its tier-1 p99 over the last minute crosses
// a bound, or on an operator's request; automatic windows are rate-limited per OSD. Pure
// bookkeeping on the totals the collector reads: the collector attaches and detaches.
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

class DetailWindows {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DetailWindows(DetailSettings s) : settings_(s) {}

  // The OSD's client-op totals at NOW (whole-op histogram, slow ops): the trigger that opens
  // a window ("slow_ops", "latency"), or nothing.
  std::optional<std::string> observe(const OsdId& osd, Clock::time_point now, const hist& whole,
                                     std::uint64_t slow);
  // An operator's request: opens a window (not rate-limited); nullopt when one is already
  // open. Returns when it ends.
  std::optional<Clock::time_point> request(const OsdId& osd, Clock::time_point now);
  // Windows that ended by NOW: closed here, to be detached by the caller.
  std::vector<OsdId> expire(Clock::time_point now);
  [[nodiscard]] bool active(const OsdId& osd) const;
  // Every OSD seen, with whether its window is open and windows opened so far by trigger.
  struct State {
    bool active = false;
    std::map<std::string, std::uint64_t> windows;
  };
  [[nodiscard]] std::map<OsdId, State> states() const;
  // An OSD that went away: its history goes (its counters stay, as series do until their TTL).
  void forget_history(const OsdId& osd);

  // The upper bound (seconds) of the slot holding the q-quantile of H; +Inf when in overflow.
  static double quantile_bound(const hist& h, double q);

 private:
  struct Sample {
    Clock::time_point at;
    hist whole;
    std::uint64_t slow = 0;
  };
  struct Osd {
    std::deque<Sample> history;  // the last minute and one sample before it
    bool active = false;
    Clock::time_point until{};
    std::optional<Clock::time_point> last_auto;
    std::map<std::string, std::uint64_t> windows;
  };
  void open(Osd& o, Clock::time_point now, const std::string& trigger);

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
