#include "collectors/rados/rados_records.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#include "collectors/rados/rados_probes.h"

namespace cephscope::rados {

SlowOp to_slow_op(const rados_slow_record& r, const std::string& process) {
  SlowOp op;
  op.kind = "client";
  op.slow = r.slow != 0;
  op.process = process;
  op.pid = r.tgid;
  op.time_ns = r.time_ns;
  op.op = r.op < RADOS_OP_COUNT ? kOps[r.op] : "other";
  op.tid = r.tid;
  if (r.pool != RADOS_POOL_UNKNOWN) {  // a marker build's ops carry none
    op.pool = static_cast<std::uint64_t>(r.pool);
  }
  if (r.have_ids != 0) {
    op.pg = fmt::format("{}.{:x}", r.pool, r.pg_seed);
    if (r.osd >= 0) {
      op.acting_osd = r.osd;
    }
  }
  op.object.assign(r.object, strnlen(r.object, sizeof(r.object)));
  op.object_truncated = r.object_len > op.object.size();
  op.seconds = static_cast<double>(r.whole_ns) / 1e9;
  op.resends = r.resends;
  if (r.result < 0) {
    op.error = kErrorClasses[rados_error_class(r.result)];
  }
  constexpr std::uint8_t kClient = 8;  // CEPH_ENTITY_TYPE_CLIENT
  if ((r.have_reqid & RADOS_REQID_GID) != 0 && (r.have_reqid & RADOS_REQID_INC) != 0) {
    op.client = fmt::format("client.{}", r.gid);
    op.request_id = request_id(kClient, static_cast<std::int64_t>(r.gid), r.inc, op.tid);
  }
  if ((r.have_reqid & RADOS_REQID_FSID) != 0) {
    op.fsid = uuid_text(r.fsid);  // "" until the client has an OSD map
  }
  op.trace_id = trace_id(op.fsid, op.request_id);
  return op;
}

}  // namespace cephscope::rados
