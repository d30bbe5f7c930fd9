#include "collectors/slow_ops.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace cephscope {

std::string printable(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c < 0x20 || c > 0x7e; }, '?');
  return s;
}

void SlowOpLog::add(SlowOp op) {
  std::lock_guard lock(mu_);
  ++recorded_;
  if (capacity_ == 0) {
    return;
  }
  if (ops_.size() == capacity_) {
    ops_.pop_front();
  }
  ops_.push_back(std::move(op));
}

std::uint64_t SlowOpLog::recorded() const {
  std::lock_guard lock(mu_);
  return recorded_;
}

std::string SlowOpLog::json() const {
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json ops = nlohmann::json::array();
  std::lock_guard lock(mu_);
  for (std::size_t i = ops_.size(); i-- > 0;) {  // newest first
    const SlowOp& op = ops_[i];
    nlohmann::json o = {{"kind", op.kind},
                        {"time", static_cast<double>(op.time_ns) / 1e9},
                        {"op", op.op},
                        {"tid", op.tid},
                        {"pg", op.pg},
                        {"object", op.object},
                        {"object_truncated", op.object_truncated},
                        {"seconds", op.seconds}};
    o["pool"] = op.pool ? nlohmann::json(*op.pool) : nlohmann::json(nullptr);
    if (op.kind == "client") {
      o["process"] = op.process;
      o["pid"] = op.pid;
      o["acting_osd"] = op.acting_osd ? nlohmann::json(*op.acting_osd) : nlohmann::json(nullptr);
      o["resends"] = op.resends;
      o["error"] = op.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(op.error);
      ops.push_back(std::move(o));
      continue;
    }
    nlohmann::json stages = nlohmann::json::object();
    for (const auto& [name, secs] : op.stages) {
      stages[name] = secs;
    }
    nlohmann::json commits = nlohmann::json::array();
    for (const auto& [osd, secs] : op.replica_commits) {
      commits.push_back({{"osd", osd}, {"seconds", secs ? nlohmann::json(*secs) : nullptr}});
    }
    o.update({{"ceph_daemon", op.ceph_daemon},
              {"fsid", op.fsid},
              {"client", op.client},
              {"replicas", op.replicas},
              {"replica_commits", std::move(commits)},
              {"last_replica", op.replica_commits.empty()
                                   ? nlohmann::json(nullptr)
                                   : nlohmann::json(op.replica_commits.back().first)},
              {"stages", std::move(stages)}});
    ops.push_back(std::move(o));
  }
  out["capacity"] = capacity_;
  out["recorded"] = recorded_;
  out["ops"] = std::move(ops);
  // object names are bytes: invalid UTF-8 is replaced, never passed through
  return out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::vector<std::string> replicas_of(std::string_view event) {
  constexpr std::string_view kPrefix = "waiting for subops from ";
  std::vector<std::string> out;
  if (!event.starts_with(kPrefix)) {
    return out;
  }
  event.remove_prefix(kPrefix.size());
  while (!event.empty()) {
    const auto comma = event.find(',');
    // a replica is "N"; an EC shard "N(S)": the OSD id is the leading digits
    std::string_view id = event.substr(0, comma);
    id = id.substr(0, id.find_first_not_of("0123456789"));
    if (!id.empty() && id.size() <= 10) {
      out.emplace_back(id);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    event.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace cephscope
