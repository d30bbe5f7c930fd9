#include "collectors/osd/osd_records.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "collectors/osd/osd_probes.h"

namespace cephscope {

namespace {

constexpr std::array<const char*, OSD_OP_COUNT> kOps = {"read", "write", "other"};

}  // namespace

SlowOp to_slow_op(const osd_slow_record& r, const std::string& who, const std::string& fsid) {
  SlowOp op;
  op.ceph_daemon = who;
  op.fsid = fsid;
  op.time_ns = r.time_ns;
  op.op = r.op < OSD_OP_COUNT ? kOps[r.op] : "other";
  op.kind = r.kind == OSD_RECORD_REPLICA ? "replica" : "osd";
  op.slow = r.slow != 0;
  op.client = (r.name_type == 8 ? "client." : "entity.") + std::to_string(r.client);
  op.tid = r.tid;
  if (r.have_reqid != 0 && r.have_inc != 0) {  // without the incarnation, no id is claimed
    op.request_id = request_id(r.name_type, r.client, r.inc, r.tid);
    op.trace_id = trace_id(fsid, op.request_id);
  }
  if (r.have_pg != 0) {
    op.pool = r.pool;
    std::array<char, 48> pg{};
    std::snprintf(pg.data(), pg.size(), "%llu.%x", static_cast<unsigned long long>(r.pool),
                  r.pg_seed);
    op.pg = pg.data();
  }
  op.object.assign(r.object, strnlen(r.object, sizeof(r.object)));
  op.object_truncated = r.object_len > op.object.size();
  op.replicas = replicas_of(std::string_view(r.replicas, strnlen(r.replicas, sizeof(r.replicas))));
  // tier 2: the replies in the order taken; the ring keeps the last OSD_REPLIES_KEPT
  const std::uint32_t kept = std::min<std::uint32_t>(r.replies, OSD_REPLIES_KEPT);
  for (std::uint32_t k = r.replies - kept; k < r.replies; ++k) {
    const std::uint32_t i = k % OSD_REPLIES_KEPT;
    std::optional<double> after;  // 0: the op's start was not known
    if (r.reply_after_ns[i] != 0) {
      after = static_cast<double>(r.reply_after_ns[i]) / 1e9;
    }
    op.replica_commits.emplace_back(std::to_string(r.reply_osd[i]), after);
  }
  op.seconds = static_cast<double>(r.whole_ns) / 1e9;
  for (int i = 0; i < OSD_STAGE_COUNT; ++i) {
    if ((r.known & (1U << i)) != 0) {
      op.stages.emplace_back(osd::kStages[i], static_cast<double>(r.stage_ns[i]) / 1e9);
    }
  }
  return op;
}

std::unique_ptr<SlowOpReader> SlowOpReader::start(int ringbuf_fd, SlowOpLog& log,
                                                  OsdExemplars& exemplars, Names names) {
  std::unique_ptr<SlowOpReader> self(new SlowOpReader(log, exemplars, std::move(names)));
  SlowOpReader* raw = self.get();
  self->reader_ = RingReader::start(ringbuf_fd, "osd", [raw](const void* data, std::size_t size) {
    if (size >= sizeof(osd_slow_record)) {
      raw->take(*static_cast<const osd_slow_record*>(data));
    }
  });
  if (!self->reader_) {
    return nullptr;
  }
  return self;
}

// One op's record: a series' new slowest goes to the exemplars; a slow one is kept for
// /debug/slow-ops and logged.
void SlowOpReader::take(const osd_slow_record& r) {
  const auto names = names_(r.tgid);
  if (!names) {
    return;  // its OSD is being detached
  }
  SlowOp op = to_slow_op(r, names->first, names->second);
  if (r.exemplar != 0) {
    log_.count_exemplar_record();
  }
  if (r.exemplar != 0 && !op.trace_id.empty()) {
    const int kind = r.kind == OSD_RECORD_REPLICA ? OSD_KIND_SUBOP : OSD_KIND_OP;
    exemplars_.offer({r.target, kind, r.op}, op, r.interval, op.slow);
  }
  if (!op.slow) {
    return;
  }
  const auto longest =
      std::max_element(op.stages.begin(), op.stages.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string replicas;
  for (const auto& id : op.replicas) {
    replicas += (replicas.empty() ? "" : ",") + id;
  }
  std::string last;
  if (!op.replica_commits.empty()) {
    const auto& [osd, at] = op.replica_commits.back();
    last = at ? fmt::format(", last replica osd.{} at {:.3f} s", osd, *at)
              : fmt::format(", last replica osd.{}", osd);
  }
  if (op.kind == "replica") {
    spdlog::info("osd: slow replica sub-op on {}: {}:{} took {:.3f} s, longest stage {} {:.3f} s",
                 op.ceph_daemon, op.client, op.tid, op.seconds,
                 longest == op.stages.end() ? "unknown" : longest->first,
                 longest == op.stages.end() ? 0.0 : longest->second);
    log_.add(std::move(op));
    return;
  }
  spdlog::info(
      "osd: slow op on {}: {} {}:{} took {:.3f} s, longest stage {} {:.3f} s; pg {}, object "
      "\"{}\"{}, replicas [{}]{}",
      op.ceph_daemon, op.op, op.client, op.tid, op.seconds,
      longest == op.stages.end() ? "unknown" : longest->first,
      longest == op.stages.end() ? 0.0 : longest->second, op.pg.empty() ? "unknown" : op.pg,
      printable(op.object), op.object_truncated ? "..." : "", replicas, last);
  log_.add(std::move(op));
}

}  // namespace cephscope
