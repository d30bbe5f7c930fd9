#include "collectors/slow_ops.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>

namespace cephscope {

std::string printable(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c < 0x20 || c > 0x7e; }, '?');
  return s;
}

void SlowOpLog::add(SlowOp op) {
  if (listener_) {
    listener_(op);
  }
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

void SlowOpLog::keep(SlowOp op) {
  if (listener_) {
    listener_(op);
  }
  std::lock_guard lock(mu_);
  if (capacity_ == 0) {
    return;
  }
  if (exemplar_ops_.size() >= capacity_ * kExemplarRoom) {
    exemplar_ops_.pop_front();
  }
  exemplar_ops_.push_back(std::move(op));
}

void SlowOpLog::count_exemplar_record() {
  std::lock_guard lock(mu_);
  ++exemplar_records_;
}

namespace {

nlohmann::json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

// One record as the endpoint shows it; "start" and "time" are on one clock (realtime).
nlohmann::json op_json(const SlowOp& op) {
  const double end = static_cast<double>(op.time_ns) / 1e9;
  nlohmann::json o = {{"kind", op.kind},
                      {"time", end},
                      {"start", end - op.seconds},
                      {"op", op.op},
                      {"tid", op.tid},
                      {"request_id", text_or_null(op.request_id)},
                      {"trace_id", text_or_null(op.trace_id)},
                      {"slow", op.slow},
                      {"fsid", text_or_null(op.fsid)},
                      {"pg", op.pg},
                      {"object", op.object},
                      {"object_truncated", op.object_truncated},
                      {"seconds", op.seconds}};
  o["pool"] = op.pool ? nlohmann::json(*op.pool) : nlohmann::json(nullptr);
  if (op.kind == "client") {
    o["client"] = text_or_null(op.client);
    o["process"] = op.process;
    o["pid"] = op.pid;
    o["acting_osd"] = op.acting_osd ? nlohmann::json(*op.acting_osd) : nlohmann::json(nullptr);
    o["resends"] = op.resends;
    o["error"] = text_or_null(op.error);
    return o;
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
            {"client", op.client},
            {"replicas", op.replicas},
            {"replica_commits", std::move(commits)},
            {"last_replica", op.replica_commits.empty()
                                 ? nlohmann::json(nullptr)
                                 : nlohmann::json(op.replica_commits.back().first)},
            {"stages", std::move(stages)}});
  return o;
}

// Object names are bytes: invalid UTF-8 is replaced, never passed through.
std::string dump(const nlohmann::json& doc) {
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string SlowOpLog::json() const {
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json ops = nlohmann::json::array();
  std::lock_guard lock(mu_);
  for (std::size_t i = ops_.size(); i-- > 0;) {  // newest first
    ops.push_back(op_json(ops_[i]));
  }
  out["capacity"] = capacity_;
  out["recorded"] = recorded_;
  out["exemplar_records"] = exemplar_records_;
  out["exemplars_kept"] = exemplar_ops_.size();
  out["ops"] = std::move(ops);
  return dump(out);
}

std::optional<std::string> SlowOpLog::trace_json(std::string_view trace) const {
  std::vector<const SlowOp*> parts;
  std::lock_guard lock(mu_);
  for (const auto* kept : {&ops_, &exemplar_ops_}) {
    for (const SlowOp& op : *kept) {
      if (!trace.empty() && op.trace_id == trace) {
        parts.push_back(&op);
      }
    }
  }
  if (parts.empty()) {
    return std::nullopt;
  }
  auto start = [](const SlowOp* op) {
    return static_cast<double>(op->time_ns) / 1e9 - op->seconds;
  };
  std::stable_sort(parts.begin(), parts.end(),
                   [&](const SlowOp* a, const SlowOp* b) { return start(a) < start(b); });
  nlohmann::json list = nlohmann::json::array();
  for (const SlowOp* op : parts) {
    list.push_back(op_json(*op));
  }
  return dump({{"trace_id", std::string(trace)}, {"parts", std::move(list)}});
}

std::string request_id(std::uint8_t entity_type, std::int64_t num, std::int32_t inc,
                       std::uint64_t tid) {
  const char* type = nullptr;
  switch (entity_type) {  // CEPH_ENTITY_TYPE_*
    case 0x01:
      type = "mon";
      break;
    case 0x02:
      type = "mds";
      break;
    case 0x04:
      type = "osd";
      break;
    case 0x08:
      type = "client";
      break;
    case 0x10:
      type = "mgr";
      break;
    default:
      return "";
  }
  return fmt::format("{}.{}.{}:{}", type, num, inc, tid);
}

std::string trace_id(std::string_view fsid, std::string_view request_id) {
  if (fsid.empty() || request_id.empty()) {
    return "";
  }
  std::string input = std::string(fsid) + " " + std::string(request_id);
  std::transform(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(fsid.size()),
                 input.begin(), [](unsigned char c) { return std::tolower(c); });
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest.data());
  std::string out;
  for (std::size_t i = 0; i < 16; ++i) {
    out += fmt::format("{:02x}", digest[i]);
  }
  // W3C trace-context forbids the all-zero id; SHA-256 gives it with probability 2^-128
  return out == std::string(32, '0') ? "" : out;
}

std::string uuid_text(const std::uint8_t (&bytes)[16]) {
  if (std::all_of(std::begin(bytes), std::end(bytes), [](std::uint8_t b) { return b == 0; })) {
    return "";
  }
  std::string out;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out += '-';
    }
    out += fmt::format("{:02x}", bytes[i]);
  }
  return out;
}

bool is_trace_id(std::string_view text) {
  return text.size() == 32 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
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
