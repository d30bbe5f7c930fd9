#include "collectors/osd_probes.h"

#include <algorithm>
#include <utility>

#include "profile/call_site.h"
#include "profile/elf_file.h"

namespace cephscope::osd {

const char* const kProbeSet = R"({
  "schema": "cephscope-probe-set", "schema_version": 1, "name": "osd-stages",
  "description": "OSD stage collector: op completion, transaction queued, BlueStore transaction states, stamps Ceph keeps.",
  "objects": ["ceph-osd"],
  "functions": ["BlueStore::queue_transactions", "PrimaryLogPG::log_op_stats",
                "ReplicatedBackend::repop_commit", "BlueStore::_txc_aio_submit",
                "BlueStore::_txc_state_proc", "BlueStore::BlueStoreThrottle::log_state_latency",
                "BlueStore::_txc_finish_io", "BlueStore::_txc_committed_kv"],
  "types": [
    {"name": "OpRequest", "members": ["request", "reqid.name._type", "reqid.name._num",
      "reqid.tid", "op_info.rmw_flags", "dequeued_time", "events"]},
    {"name": "TrackedOp::Event", "members": ["stamp", "str"]},
    {"name": "Message", "members": ["recv_stamp", "throttle_stamp", "recv_complete_stamp",
      "header.data_len"]},
    {"name": "ReplicatedBackend::RepModify", "members": ["op"]},
    {"name": "BlueStore::TransContext", "members": ["start", "last_stamp"]}
  ]})";

namespace {

// An entry uprobe: the function, its program, and the member groups the program reads.
struct EntryProbe {
  const char* function;
  const char* program;
  std::uint32_t needs;
};
constexpr std::array<EntryProbe, 5> kEntryProbes = {{
    {"BlueStore::queue_transactions", "osd_txn_queued", OSD_HAVE_REQID},     // P1
    {"PrimaryLogPG::log_op_stats", "osd_op_done", OSD_HAVE_STAMPS},          // P2
    {"ReplicatedBackend::repop_commit", "osd_subop_done", OSD_HAVE_STAMPS},  // P3
    {"BlueStore::_txc_aio_submit", "osd_txc_aio_submit", OSD_HAVE_TXC},      // P4
    {"BlueStore::_txc_committed_kv", "osd_txc_kv_done", OSD_HAVE_TXC},       // P6
}};
// P5: the call logging io_done in _txc_state_proc; _txc_finish_io's entry when not found.
constexpr const char* kStateProc = "BlueStore::_txc_state_proc";
constexpr const char* kLogState = "BlueStore::BlueStoreThrottle::log_state_latency";
constexpr const char* kFinishIo = "BlueStore::_txc_finish_io";
constexpr std::size_t kMaxFunctionBytes = 256 * 1024;

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
  auto off = [&](const char* type, const char* path, std::uint32_t& into) {
    const auto* m = p.member(type, path);
    if (m == nullptr || m->status != profile::ItemStatus::kOk) {
      missing += std::string(missing.empty() ? "" : ", ") + type + "::" + path;
      return false;
    }
    into = static_cast<std::uint32_t>(m->offset);
    return true;
  };
  std::uint32_t num = 0;
  std::uint32_t tid = 0;
  std::uint32_t str = 0;
  const bool request = off("OpRequest", "request", l.op_request);
  if (off("OpRequest", "reqid.name._type", l.op_reqid) &&
      off("OpRequest", "reqid.name._num", num) && off("OpRequest", "reqid.tid", tid) &&
      num == l.op_reqid + 8 && tid == l.op_reqid + 16) {
    l.have |= OSD_HAVE_REQID;
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
  set_windows(l);
  if (off("BlueStore::TransContext", "start", l.txc_start) &&
      off("BlueStore::TransContext", "last_stamp", l.txc_last_stamp)) {
    l.have |= OSD_HAVE_TXC;
    if (l.txc_last_stamp == l.txc_start + 8) {
      l.have |= OSD_HAVE_TXC_ADJACENT;
    }
  }
  return l;
}

// The out-of-line copy of NAME, or why there is none.
Result<const profile::FunctionInstance*> out_of_line(const profile::Profile& p,
                                                     const std::string& name) {
  const auto* fn = p.function(name);
  if (fn == nullptr) {
    return make_error(ErrorKind::kNotFound, "function not in profile");
  }
  if (fn->status == profile::ItemStatus::kOk) {
    for (const auto& x : fn->instances) {
      if (!x.inlined && !x.clone) {
        return &x;
      }
    }
  }
  return make_error(ErrorKind::kNotFound, "function " + std::string(to_string(fn->status)));
}

// CET builds start with endbr64, which the kernel single-steps: probe the next instruction.
std::uint64_t entry_offset(const profile::FunctionInstance& f) {
  return f.file_offset + (f.entry_insn == "endbr64" ? 4 : 0);
}

Result<std::uint64_t> io_done_call(const profile::Profile& p, const std::string& binary) {
  auto proc = out_of_line(p, kStateProc);
  auto log = out_of_line(p, kLogState);
  if (!proc.ok() || !log.ok()) {
    return make_error(ErrorKind::kNotFound, std::string(proc.ok() ? kLogState : kStateProc) + ": " +
                                                (proc.ok() ? log : proc).error().message);
  }
  const auto& f = **proc;
  if (f.size == 0 || f.size > kMaxFunctionBytes) {
    return make_error(ErrorKind::kInvalidInput, "_txc_state_proc has an unusable size");
  }
  auto elf = profile::ElfFile::open(binary);
  if (!elf.ok()) {
    return elf.error();
  }
  const auto code = elf->read(f.file_offset, f.size);
  if (code.size() != f.size) {
    return make_error(ErrorKind::kInvalidInput, "short read of _txc_state_proc");
  }
  auto site =
      profile::third_state_call(profile::find_calls(code, f.vaddr, f.file_offset, (*log)->vaddr));
  if (!site.ok()) {
    return site.error();
  }
  return site->file_offset;
}

}  // namespace

BuildPlan plan_for(const profile::Profile& prof, const std::string& binary, const std::string& who,
                   bool store_stages) {
  BuildPlan plan;
  plan.layout = layout_of(prof, plan.missing_members);
  auto add = [&](const std::string& function, const char* program, std::uint32_t needs,
                 const Result<std::uint64_t>& offset) {
    if (!offset.ok()) {
      plan.unavailable.push_back({function, who, false, offset.error().message});
    } else if ((plan.layout.have & needs) != needs) {
      plan.unavailable.push_back(
          {function, who, false, "members missing: " + plan.missing_members});
    } else {
      plan.points.push_back({function, program, *offset});
    }
  };
  auto entry = [&](const char* function) -> Result<std::uint64_t> {
    auto f = out_of_line(prof, function);
    if (!f.ok()) {
      return f.error();
    }
    return entry_offset(**f);
  };
  for (const auto& p : kEntryProbes) {
    if ((p.needs & OSD_HAVE_TXC) && !store_stages) {
      continue;
    }
    add(p.function, p.program, p.needs, entry(p.function));
  }
  if (!store_stages) {
    plan.store_off = "turned off (collectors.osd.bluestore_stages: false)";
    plan.layout.have &= ~(OSD_HAVE_TXC | OSD_HAVE_TXC_ADJACENT);  // P1 claims no transaction
    return plan;
  }
  auto call = io_done_call(prof, binary);
  if (call.ok()) {
    add(std::string(kStateProc) + " io_done call", "osd_txc_io_done", OSD_HAVE_TXC, call);
  } else {
    plan.io_done_note = "io_done call site not found (" + call.error().message +
                        "): io done is counted in bluestore_kv_queued";
    add(kFinishIo, "osd_txc_finish_io", OSD_HAVE_TXC, entry(kFinishIo));
  }
  return plan;
}

std::array<std::string, OSD_STAGE_COUNT> stage_gaps(const BuildPlan& plan,
                                                    const std::set<std::string>& attached) {
  const std::uint32_t have = plan.layout.have;
  auto gap = [&](std::uint32_t members, std::initializer_list<const char*> programs) {
    std::string why;
    if ((have & members) != members) {
      why = "members missing: " + plan.missing_members;
    }
    for (const char* p : programs) {
      if (!attached.contains(p)) {
        why += std::string(why.empty() ? "" : "; ") + "probe " + p + " not attached";
      }
    }
    return why;
  };
  const bool done = attached.contains("osd_op_done") || attached.contains("osd_subop_done");
  const char* io_done =
      attached.contains("osd_txc_io_done") ? "osd_txc_io_done" : "osd_txc_finish_io";
  std::array<std::string, OSD_STAGE_COUNT> out;
  const std::string no_end = done ? "" : "probes osd_op_done and osd_subop_done not attached";
  auto with_end = [&](std::string why) {
    return no_end.empty() ? why : why + (why.empty() ? "" : "; ") + no_end;
  };
  out[OSD_STAGE_THROTTLE] = with_end(gap(OSD_HAVE_STAMPS, {}));
  out[OSD_STAGE_RECEIVE] = out[OSD_STAGE_THROTTLE];
  out[OSD_STAGE_DISPATCH] = with_end(gap(OSD_HAVE_STAMPS | OSD_HAVE_EVENTS, {}));
  out[OSD_STAGE_QUEUE] = with_end(gap(OSD_HAVE_EVENTS | OSD_HAVE_DEQUEUED, {}));
  out[OSD_STAGE_EXECUTE] = with_end(gap(OSD_HAVE_DEQUEUED | OSD_HAVE_REQID, {"osd_txn_queued"}));
  const std::uint32_t txc = OSD_HAVE_TXC | OSD_HAVE_REQID;
  const std::string store = !plan.store_off.empty()
                                ? plan.store_off
                                : with_end(gap(txc, {"osd_txn_queued", "osd_txc_aio_submit",
                                                     io_done, "osd_txc_kv_done"}));
  for (int s = OSD_STAGE_BS_PREPARE; s <= OSD_STAGE_BS_KV_COMMIT; ++s) {
    out[s] = store;
  }
  if (out[OSD_STAGE_BS_IO_DONE].empty() && !attached.contains("osd_txc_io_done")) {
    out[OSD_STAGE_BS_IO_DONE] = plan.io_done_note;
  }
  out[OSD_STAGE_REPLICATION] = gap(OSD_HAVE_EVENTS, {"osd_op_done"});
  out[OSD_STAGE_COMMIT] = with_end(gap(OSD_HAVE_EVENTS, {}));
  return out;
}

}  // namespace cephscope::osd
