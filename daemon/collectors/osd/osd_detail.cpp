#include "collectors/osd/osd_detail.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cephscope {

namespace {

hist minus(const hist& a, const hist& b) {
  hist d{};
  for (std::size_t i = 0; i < HIST_SLOTS; ++i) {
    d.slots[i] = a.slots[i] >= b.slots[i] ? a.slots[i] - b.slots[i] : 0;
  }
  d.sum_ns = a.sum_ns >= b.sum_ns ? a.sum_ns - b.sum_ns : 0;
  return d;
}

}  // namespace

double DetailWindows::quantile_bound(const hist& h, double q) {
  const std::uint64_t n = hist_count(h);
  if (n == 0) {
    return 0;
  }
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < HIST_FINITE_SLOTS; ++i) {
    seen += h.slots[i];
    if (seen >= rank && seen > 0) {
      return static_cast<double>(HIST_FIRST_BOUND_NS << i) / 1e9;
    }
  }
  return std::numeric_limits<double>::infinity();
}

void DetailWindows::open(Osd& o, Clock::time_point now, const std::string& trigger) {
  o.active = true;
  o.still_slow.reset();
  o.until = now + settings_.window;
  ++o.windows[trigger];
}

std::optional<std::string> DetailWindows::trigger(const Sample& base, const OsdTotals& now,
                                                  std::uint64_t min_ops) const {
  if (now.own_slow > base.totals.own_slow) {
    return "slow_ops";
  }
  auto over = [&](const hist& total, const hist& before) {
    const hist span = minus(total, before);
    return hist_count(span) >= std::max<std::uint64_t>(min_ops, 1) &&
           quantile_bound(span, 0.99) > settings_.p99_bound_seconds;
  };
  // a primary slow only while it waits for a replica is the replica's: its sub-ops tell
  if (over(now.subops, base.totals.subops) ||
      (over(now.ops, base.totals.ops) && !over(now.replication, base.totals.replication))) {
    return "latency";
  }
  return std::nullopt;
}

std::optional<std::string> DetailWindows::observe(const OsdId& osd, Clock::time_point now,
                                                  const OsdTotals& totals) {
  Osd& o = osds_[osd];
  std::optional<std::string> opens;
  if (!o.history.empty()) {
    // the oldest sample at least a minute old, else the oldest there is
    const Sample* base = &o.history.front();
    for (const auto& s : o.history) {
      if (now - s.at >= std::chrono::minutes(1)) {
        base = &s;
      }
    }
    opens = trigger(*base, totals, settings_.min_ops);
    if (o.active) {
      // still slow: over the last interval only, so recovery shows at once; a slow OSD takes
      // few ops in a few seconds, so any number of them gives its p99 there
      o.still_slow = trigger(o.history.back(), totals, 1);
    }
  }
  o.history.push_back({now, totals});
  while (o.history.size() > 2 && now - o.history[1].at >= std::chrono::minutes(1)) {
    o.history.pop_front();
  }
  const bool rested = !o.last_auto || now - *o.last_auto >= settings_.min_interval;
  if (!opens || o.active || !rested) {
    return std::nullopt;
  }
  o.last_auto = now;
  open(o, now, *opens);
  return opens;
}

std::optional<DetailWindows::Clock::time_point> DetailWindows::request(const OsdId& osd,
                                                                       Clock::time_point now) {
  Osd& o = osds_[osd];
  if (o.active) {
    return std::nullopt;
  }
  open(o, now, "request");
  return o.until;
}

std::vector<OsdId> DetailWindows::expire(Clock::time_point now) {
  std::vector<OsdId> out;
  for (auto& [id, o] : osds_) {
    if (!o.active || now < o.until) {
      continue;
    }
    if (o.still_slow) {  // the same episode: another window, not a rest
      const std::string again = *o.still_slow;
      o.still_slow.reset();
      o.last_auto = now;
      open(o, now, again);
      spdlog::info("osd: {}: still slow ({}): detail window runs another {} s", id.first, again,
                   settings_.window.count());
      continue;
    }
    o.active = false;
    out.push_back(id);
  }
  return out;
}

bool DetailWindows::active(const OsdId& osd) const {
  auto it = osds_.find(osd);
  return it != osds_.end() && it->second.active;
}

std::map<OsdId, DetailWindows::State> DetailWindows::states() const {
  std::map<OsdId, State> out;
  for (const auto& [id, o] : osds_) {
    out[id] = {o.active, o.windows};
  }
  return out;
}

std::pair<std::pair<int, std::string>, std::optional<OsdId>> detail_request_reply(
    DetailMode mode, DetailWindows& windows, const std::set<OsdId>& matches, const std::string& who,
    const std::string& fsid) {
  if (mode != DetailMode::kAuto) {
    return {{409, "collectors.osd.detail is " + std::string(to_string(mode)) +
                      ": windows open only under auto\n"},
            std::nullopt};
  }
  if (matches.empty()) {
    return {{404, "no OSD " + who + (fsid.empty() ? "" : " of cluster " + fsid) + " here\n"},
            std::nullopt};
  }
  if (matches.size() > 1) {
    return {{400, who + " is in more than one cluster here: name it with fsid=\n"}, std::nullopt};
  }
  const OsdId id = *matches.begin();
  const auto now = DetailWindows::Clock::now();
  const auto until = windows.request(id, now);
  if (!until) {
    return {{409, "a detail window is already open on " + who + "\n"}, std::nullopt};
  }
  spdlog::info("osd: {}: detail window opened (request)", who);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(*until - now).count() + 1;
  return {{200, "detail window opened on " + who + " for " + std::to_string(secs) + " s\n"}, id};
}

void write_detail_status(MetricSink& out, DetailMode mode, const DetailWindows& windows,
                         const std::set<OsdId>& osds) {
  const auto states = windows.states();
  for (const auto& id : osds) {
    const Labels l{{"ceph_daemon", id.first}, {"fsid", id.second}};
    const auto st = states.find(id);
    const bool active = mode == DetailMode::kAlways || (st != states.end() && st->second.active);
    out.gauge("cephscope_osd_detail_active",
              "1 while tier 2 (BlueStore detail) is attached to the OSD.", l, active ? 1 : 0);
    for (const char* trigger : {"slow_ops", "latency", "request"}) {
      std::uint64_t n = 0;
      if (st != states.end()) {
        auto w = st->second.windows.find(trigger);
        n = w == st->second.windows.end() ? 0 : w->second;
      }
      out.counter("cephscope_osd_detail_windows_total",
                  "Tier-2 detail windows opened on the OSD, by what opened them.",
                  l + Labels{{"trigger", trigger}}, static_cast<double>(n));
    }
  }
}

}  // namespace cephscope
