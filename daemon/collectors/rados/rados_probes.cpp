#include "collectors/rados/rados_probes.h"

#include <algorithm>

namespace cephscope::rados {

profile::ProbeSet probe_set() {
  profile::ProbeSet set;
  set.name = "librados";
  set.description = "Client side of an op in a librados process: Objecter send, reply, finish.";
  set.objects.assign(kLibraries.begin(), kLibraries.end());
  for (const auto& u : kUprobes) {
    set.functions.emplace_back(u.function);
  }
  profile::add_members(set, kMembers);
  set.digest = profile::probe_set_digest(set);
  return set;
}

namespace {

rados_layout layout_of(const profile::Profile& p, std::string& missing) {
  rados_layout l{};
  profile::MemberOffsets off(p);
  const bool attempts = off("Objecter::Op", "attempts", l.op_attempts);
  const bool pool = off("Objecter::Op", "target.base_oloc.pool", l.op_pool);
  if (off("Objecter::Op", "target.flags", l.op_flags) && attempts && pool) {
    l.have |= RADOS_HAVE_OP;
  }
  const auto* osdop = p.type("OSDOp");
  const bool vec = off("Objecter::Op", "ops.m_holder.m_start", l.op_ops_start) &&
                   off("Objecter::Op", "ops.m_holder.m_size", l.op_ops_size);
  // The programs read the vector's pointer and size in one go, and ceph_osd_op's head (code
  // at 0, extent length at 14: the wire format's packing) in another.
  if (off("OSDOp", "op.op", l.osdop_code) && off("OSDOp", "op.extent.length", l.osdop_length) &&
      vec && l.op_ops_size == l.op_ops_start + 8 && l.osdop_length == l.osdop_code + 14 &&
      osdop != nullptr && osdop->status == profile::ItemStatus::kOk && osdop->size > 0) {
    l.osdop_size = static_cast<std::uint32_t>(osdop->size);
    l.have |= RADOS_HAVE_BYTES;
  }
  if (off("MOSDOpReply", "result", l.reply_result)) {
    l.have |= RADOS_HAVE_RESULT;
  }
  if (off("Objecter::Op", "target.base_oid.name", l.op_object)) {
    l.have |= RADOS_HAVE_OBJECT;
  }
  const bool tid = off("Objecter::Op", "tid", l.op_tid);
  const bool osd = off("Objecter::Op", "target.osd", l.op_osd);
  if (off("Objecter::Op", "target.pgid.m_seed", l.op_pg_seed) && tid && osd) {
    l.have |= RADOS_HAVE_IDS;
  }
  missing = off.missing();
  return l;
}

}  // namespace

BuildPlan plan_for(const profile::Profile& prof, const std::string& who,
                   const profile::OffsetVerifier* verifier) {
  BuildPlan plan;
  plan.layout = layout_of(prof, plan.missing_members);
  const Reason members_reason =
      prof.source == "symtab" ? Reason::kNoDebuginfo : Reason::kMembersMissing;
  for (const auto& u : kUprobes) {
    auto f = profile::out_of_line(prof, u.function);
    if (!f.ok()) {
      plan.unavailable.push_back(
          {u.function, who, false, cause_of(f.error(), Reason::kSymbolNotFound)});
      continue;
    }
    const std::uint64_t offset = profile::entry_offset(**f);
    if (verifier != nullptr) {
      if (auto checked = verifier->check(**f, offset); !checked.ok()) {
        plan.unavailable.push_back(
            {u.function, who, false, cause_of(checked.error(), Reason::kOffsetUnverified)});
        continue;
      }
    }
    if ((plan.layout.have & u.needs) != u.needs) {
      plan.unavailable.push_back(
          {u.function, who, false, {members_reason, "members missing: " + plan.missing_members}});
    } else {
      plan.points.push_back({u.function, u.program, u.probe, offset});
    }
  }
  return plan;
}

}  // namespace cephscope::rados
