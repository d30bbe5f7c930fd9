#include "collectors/osd/osd_probes.h"

#include <algorithm>
#include <utility>

#include "collectors/osd/osd_call_site.h"

namespace cephscope::osd {

using profile::entry_offset;
using profile::out_of_line;

namespace {

constexpr const char* kDescription =
    "OSD stage collector: op completion, transaction queued, BlueStore transaction states, "
    "stamps Ceph keeps.";

}  // namespace

profile::ProbeSet probe_set() {
  profile::ProbeSet set;
  set.name = "osd-stages";
  set.description = kDescription;
  set.objects = {"ceph-osd"};
  auto add_function = [&](const char* f) {
    if (f != nullptr &&
        std::find(set.functions.begin(), set.functions.end(), f) == set.functions.end()) {
      set.functions.emplace_back(f);
    }
  };
  for (const auto& u : kUprobes) {
    add_function(u.function);
    add_function(u.callee);
    if (u.callee != nullptr) {
      set.calls.push_back({u.function, u.callee});
    }
  }
  profile::add_members(set, kMembers);
  set.digest = profile::probe_set_digest(set);
  return set;
}

std::string probe_table_markdown() {
  std::string out = "| program | where | fires | reads | attached |\n|---|---|---|---|---|\n";
  auto groups = [](std::uint32_t needs) {
    std::string g;
    for (const auto& [bit, name] : std::initializer_list<std::pair<std::uint32_t, const char*>>{
             {OSD_HAVE_REQID, "reqid"},
             {OSD_HAVE_STAMPS, "Message stamps, op events"},
             {OSD_HAVE_TXC, "TransContext stamps"},
             {OSD_HAVE_REPLY, "the reply's reqid and sender"}}) {
      if ((needs & bit) != 0) {
        g += std::string(g.empty() ? "" : ", ") + name;
      }
    }
    return g;
  };
  for (const auto& u : kUprobes) {
    std::string where = std::string("`") + u.function + "`";
    if (u.callee != nullptr) {
      where.insert(0, std::string("the call to `") + u.callee + "` in ");
    }
    std::string when = u.detail ? "tier 2 (`detail`)" : "always (tier 1)";
    if (u.instead_of != nullptr) {
      when += std::string(", instead of `") + u.instead_of + "`";
    }
    out.append("| `").append(u.program).append("` | ").append(where).append(" | ");
    out.append(u.fires).append(" | ").append(groups(u.needs)).append(" | ").append(when);
    out += " |\n";
  }
  out += "\nMembers read: ";
  for (std::size_t i = 0; i < kMembers.size(); ++i) {
    out += std::string(i == 0 ? "" : ", ") + "`" + kMembers[i].type + "::" + kMembers[i].path + "`";
  }
  return out + ".\n";
}

namespace {

// The byte range of one object that the probes read, grown member by member; a member whose
// group the build lacks is not read, so it does not count.
class Window {
 public:
  explicit Window(std::uint32_t have) : have_(have) {}
  void span(std::uint32_t group, std::uint32_t off, std::uint32_t size) {
    if ((have_ & group) != 0) {
      lo_ = std::min(lo_, off);
      hi_ = std::max(hi_, off + size);
    }
  }
  // Sets off/len and returns true when the range fits one copy of at most max bytes.
  bool fits(std::uint32_t max, std::uint32_t& off, std::uint32_t& len) const {
    if (hi_ <= lo_ || hi_ - lo_ > max) {
      return false;
    }
    off = lo_;
    len = hi_ - lo_;
    return true;
  }

 private:
  std::uint32_t have_;
  std::uint32_t lo_ = UINT32_MAX;
  std::uint32_t hi_ = 0;
};

// The OpRequest bytes that hold every member the end-of-op probes read, and the Message bytes
// that hold the stamps and header.data_len (read 8 bytes at a time), when each fits one copy.
void set_windows(osd_layout& l) {
  Window op(l.have);
  op.span(OSD_HAVE_STAMPS | OSD_HAVE_DATA_LEN, l.op_request, 8);
  op.span(OSD_HAVE_REQID, l.op_reqid, 24);
  op.span(OSD_HAVE_REQID_INC, l.op_reqid + 24, 8);
  op.span(OSD_HAVE_RMW_FLAGS, l.op_rmw_flags, 8);
  op.span(OSD_HAVE_DEQUEUED, l.op_dequeued_time, 8);
  op.span(OSD_HAVE_EVENTS, l.op_events, 16);
  if (op.fits(OSD_OP_WINDOW_MAX, l.op_window, l.op_window_len)) {
    l.have |= OSD_HAVE_OP_WINDOW;
  }
  Window msg(l.have);
  msg.span(OSD_HAVE_STAMPS, l.msg_recv_stamp, 8);
  msg.span(OSD_HAVE_STAMPS, l.msg_throttle_stamp, 8);
  msg.span(OSD_HAVE_STAMPS, l.msg_complete_stamp, 8);
  msg.span(OSD_HAVE_DATA_LEN, l.msg_data_len, 8);
  if (msg.fits(OSD_MSG_WINDOW_MAX, l.msg_window, l.msg_window_len)) {
    l.have |= OSD_HAVE_MSG_WINDOW;
  }
}

osd_layout layout_of(const profile::Profile& p, std::string& missing) {
  osd_layout l{};
  profile::MemberOffsets off(p);
  std::uint32_t num = 0;
  std::uint32_t tid = 0;
  std::uint32_t str = 0;
  const bool request = off("OpRequest", "request", l.op_request);
  if (off("OpRequest", "reqid.name._type", l.op_reqid) &&
      off("OpRequest", "reqid.name._num", num) && off("OpRequest", "reqid.tid", tid) &&
      num == l.op_reqid + 8 && tid == l.op_reqid + 16) {
    l.have |= OSD_HAVE_REQID;
    // read as 8 bytes: the int and the padding that ends osd_reqid_t
    const auto* id = p.type("OpRequest");
    std::uint32_t inc = 0;
    if (off("OpRequest", "reqid.inc", inc) && inc == l.op_reqid + 24 && id != nullptr &&
        inc + 8 <= id->size) {
      l.have |= OSD_HAVE_REQID_INC;
    }
  }
  if (request && off("Message", "recv_stamp", l.msg_recv_stamp) &&
      off("Message", "throttle_stamp", l.msg_throttle_stamp) &&
      off("Message", "recv_complete_stamp", l.msg_complete_stamp)) {
    l.have |= OSD_HAVE_STAMPS;
  }
  if (request && off("Message", "header.data_len", l.msg_data_len)) {
    l.have |= OSD_HAVE_DATA_LEN;
  }
  if (off("OpRequest", "dequeued_time", l.op_dequeued_time)) {
    l.have |= OSD_HAVE_DEQUEUED;
  }
  const auto* event = p.type("TrackedOp::Event");
  if (off("OpRequest", "events", l.op_events) && off("TrackedOp::Event", "str", str) && str == 8 &&
      event != nullptr && event->size == OSD_EVENT_SIZE) {
    l.have |= OSD_HAVE_EVENTS;
  }
  if (off("OpRequest", "op_info.rmw_flags", l.op_rmw_flags)) {
    l.have |= OSD_HAVE_RMW_FLAGS;
  }
  off("ReplicatedBackend::RepModify", "op", l.repmod_op);
  if (off("PG", "pg_id.pgid.m_pool", l.pg_pool) && off("PG", "pg_id.pgid.m_seed", l.pg_seed)) {
    l.have |= OSD_HAVE_PG;
  }
  if (request && off(kMOSDOp, "hobj.oid.name", l.msg_object)) {
    l.have |= OSD_HAVE_OBJECT;
  }
  std::uint32_t reply_num = 0;
  std::uint32_t reply_tid = 0;
  std::uint32_t src_num = 0;
  if (request && off("MOSDRepOpReply", "reqid.name._type", l.reply_reqid) &&
      off("MOSDRepOpReply", "reqid.name._num", reply_num) &&
      off("MOSDRepOpReply", "reqid.tid", reply_tid) &&
      off("Message", "header.src.type", l.msg_src) && off("Message", "header.src.num", src_num) &&
      reply_num == l.reply_reqid + 8 && reply_tid == l.reply_reqid + 16 &&
      src_num == l.msg_src + 1) {
    l.have |= OSD_HAVE_REPLY;
  }
  set_windows(l);
  if (off("BlueStore::TransContext", "start", l.txc_start) &&
      off("BlueStore::TransContext", "last_stamp", l.txc_last_stamp)) {
    l.have |= OSD_HAVE_TXC;
    if (l.txc_last_stamp == l.txc_start + 8) {
      l.have |= OSD_HAVE_TXC_ADJACENT;
    }
  }
  missing = off.missing();
  return l;
}

// A call site's rsi_saved_in as the programs know it: enum cephscope_osd_saved_reg (bpf/osd.h)
// lists the registers in profile::kCalleeSaved's order, after OSD_REG_NONE.
std::uint32_t saved_reg(std::string_view name) {
  const auto* it = std::find(profile::kCalleeSaved.begin(), profile::kCalleeSaved.end(), name);
  return it == profile::kCalleeSaved.end()
             ? std::uint32_t{OSD_REG_NONE}
             : OSD_REG_RBX + static_cast<std::uint32_t>(it - profile::kCalleeSaved.begin());
}

// The io_done call: the third of BlueStore's consecutive state-logging calls, among the
// calls the resolver found (osd_call_site.h). The probe goes on its return address, where the
// transaction is in the callee-saved register it was copied from, rax holds io_done as Ceph
// measured it and last_stamp is Ceph's own end of io_done.
Result<std::uint64_t> io_done_return(const profile::Profile& p, const UprobeDef& def,
                                     osd_layout& layout) {
  const profile::CallSiteEntry* calls = p.calls(def.function, def.callee);
  if (calls == nullptr) {
    return make_error(ErrorKind::kNotFound, std::string("the profile has no calls of ") +
                                                def.callee + " in " + def.function);
  }
  if (calls->status != profile::ItemStatus::kOk) {
    return make_error(ErrorKind::kNotFound, calls->message);
  }
  auto site = third_state_call(calls->sites);
  if (!site.ok()) {
    return site.error();
  }
  const std::uint32_t reg =
      site->rsi_saved_in ? saved_reg(*site->rsi_saved_in) : std::uint32_t{OSD_REG_NONE};
  if (reg == OSD_REG_NONE) {
    return make_error(ErrorKind::kNotFound,
                      "the transaction is in no callee-saved register after the call");
  }
  layout.io_done_txc_reg = reg;
  return site->file_offset + profile::kCallSize;
}

}  // namespace

// The Debian package holding OBJECT's debug symbols.
std::string debug_package(const std::string& object) {
  if (object == "ceph-osd") {
    return "ceph-osd-dbg";
  }
  if (object.starts_with("librbd")) {
    return "librbd1-dbg";
  }
  return object.starts_with("librados") || object.starts_with("libceph-common") ? "librados2-dbg"
                                                                                : object + "-dbg";
}

BuildPlan plan_for(const profile::Profile& prof, const std::string& who, bool detail,
                   const profile::OffsetVerifier* verifier) {
  BuildPlan plan;
  plan.layout = layout_of(prof, plan.missing_members);
  if (prof.source == "symtab" && !plan.missing_members.empty()) {
    // Only the symbol table: what the operator can do about it goes with the reason.
    plan.members_reason = Reason::kNoDebuginfo;
    plan.missing_members += "; no debuginfo for " + prof.object + " build-id " + prof.build_id +
                            ": install its debug symbols (Debian: " + debug_package(prof.object) +
                            ") or supply a profile made where they are (cephscope profile " +
                            "generate, profiles.shipped_dirs)";
  }
  // Why the resolver had no DWARF, when it said (a refused debug file): once, at the end.
  for (const auto& m : prof.members) {
    if (!plan.missing_members.empty() && m.status == profile::ItemStatus::kNoDebuginfo &&
        m.message.starts_with("no DWARF: ")) {
      plan.missing_members += " (" + m.message + ")";
      break;
    }
  }
  auto add = [&](const std::string& function, const char* program, std::uint32_t needs, bool detail,
                 const Result<std::uint64_t>& offset) {
    if (!offset.ok()) {
      plan.unavailable.push_back(
          {function, who, false, cause_of(offset.error(), Reason::kSymbolNotFound)});
    } else if ((plan.layout.have & needs) != needs) {
      plan.unavailable.push_back(
          {function,
           who,
           false,
           {plan.members_reason, "members missing: " + plan.missing_members}});
    } else {
      plan.points.push_back({function, program, *offset, detail});
    }
  };
  auto entry = [&](const char* function) -> Result<std::uint64_t> {
    auto f = out_of_line(prof, function);
    if (!f.ok()) {
      return f.error();
    }
    return entry_offset(**f);
  };
  // Each probe of the table; a fallback only when the probe it stands in for was not placed.
  std::set<std::string> unplaced;
  for (const auto& u : kUprobes) {
    if (u.detail && !detail) {
      continue;
    }
    if (u.instead_of != nullptr && !unplaced.contains(u.instead_of)) {
      continue;
    }
    Result<std::uint64_t> offset =
        u.callee != nullptr ? io_done_return(prof, u, plan.layout) : entry(u.function);
    if (offset.ok() && verifier != nullptr) {
      auto holder = out_of_line(prof, u.function);
      const Status checked = holder.ok() ? verifier->check(**holder, *offset) : holder.error();
      if (!checked.ok()) {
        offset = checked.error();
      }
    }
    if (!offset.ok() && u.callee != nullptr) {
      plan.io_done = {reason_of(offset.error(), Reason::kSymbolNotFound),
                      "io_done call site not found (" + offset.error().message +
                          "): io done is counted in bluestore_kv_queued"};
      unplaced.insert(u.program);
      continue;
    }
    add(u.label, u.program, u.needs, u.detail, offset);
  }
  if (!detail) {
    plan.store_off = {Reason::kDisabled, "tier 2 turned off (collectors.osd.detail: never)"};
  }
  return plan;
}

std::array<Cause, OSD_STAGE_COUNT> stage_gaps(const BuildPlan& plan,
                                              const std::set<std::string>& attached) {
  const std::uint32_t have = plan.layout.have;
  // Each cause adds its detail; the first one met gives the reason.
  auto add = [](Cause& to, Reason reason, const std::string& detail) {
    if (to.ok()) {
      to.reason = reason;
    }
    to.detail += (to.detail.empty() ? "" : "; ") + detail;
  };
  auto gap = [&](std::uint32_t members, std::initializer_list<const char*> programs) {
    Cause why;
    if ((have & members) != members) {
      add(why, plan.members_reason, "members missing: " + plan.missing_members);
    }
    for (const char* p : programs) {
      if (!attached.contains(p)) {
        add(why, Reason::kProbeNotAttached, std::string("probe ") + p + " not attached");
      }
    }
    return why;
  };
  const bool done = attached.contains(kOpDone) || attached.contains(kSubopDone);
  const char* io_done = attached.contains(kTxcIoDone) ? kTxcIoDone : kTxcFinishIo;
  std::array<Cause, OSD_STAGE_COUNT> out;
  auto with_end = [&](Cause why) {
    if (!done) {
      add(why, Reason::kProbeNotAttached, "probes osd_op_done and osd_subop_done not attached");
    }
    return why;
  };
  out[OSD_STAGE_THROTTLE] = with_end(gap(OSD_HAVE_STAMPS, {}));
  out[OSD_STAGE_RECEIVE] = out[OSD_STAGE_THROTTLE];
  out[OSD_STAGE_DISPATCH] = with_end(gap(OSD_HAVE_STAMPS | OSD_HAVE_EVENTS, {}));
  out[OSD_STAGE_QUEUE] = with_end(gap(OSD_HAVE_EVENTS | OSD_HAVE_DEQUEUED, {}));
  // Execute ends at the sub-ops' event (tier 1) or at the transaction queued (tier 2).
  out[OSD_STAGE_EXECUTE] = with_end(gap(OSD_HAVE_DEQUEUED | OSD_HAVE_EVENTS, {}));
  const std::uint32_t txc = OSD_HAVE_TXC | OSD_HAVE_REQID;
  const Cause store = !plan.store_off.ok()
                          ? plan.store_off
                          : with_end(gap(txc, {kTxnQueued, kTxcAioSubmit, io_done, kTxcKvDone}));
  for (int s = OSD_STAGE_BS_PREPARE; s <= OSD_STAGE_BS_KV_COMMIT; ++s) {
    out[s] = store;
  }
  if (out[OSD_STAGE_BS_IO_DONE].ok() && !attached.contains(kTxcIoDone)) {
    out[OSD_STAGE_BS_IO_DONE] = plan.io_done;
  }
  out[OSD_STAGE_REPLICATION] = gap(OSD_HAVE_EVENTS, {kOpDone});
  out[OSD_STAGE_COMMIT] = with_end(gap(OSD_HAVE_EVENTS, {}));
  return out;
}

}  // namespace cephscope::osd
