// What the OSD stage collector attaches in one ceph-osd build: its uprobes and their offsets,
// the member layout its programs read, and which stages that leaves working. See
// docs/collectors/osd.md.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "bpf/osd.h"
#include "collectors/status.h"
#include "profile/probe_set.h"
#include "profile/profile.h"
#include "profile/verify.h"

namespace cephscope::osd {

inline constexpr std::array<const char*, OSD_STAGE_COUNT> kStages = {"throttle",
                                                                     "receive",
                                                                     "dispatch",
                                                                     "queue",
                                                                     "execute",
                                                                     "bluestore_prepare",
                                                                     "bluestore_aio_wait",
                                                                     "bluestore_io_done",
                                                                     "bluestore_kv_queued",
                                                                     "bluestore_kv_commit",
                                                                     "replication",
                                                                     "commit"};

// The OSD collector's probe table: every uprobe, the function it goes on, the BPF program
// (its SEC() in bpf/osd.bpf.c) and the member groups that program reads, and every member the
// programs read. The probe-set spec the resolver is given, the attach plan, the statuses,
// `cephscope profile probes` and the table in docs/collectors/osd.md derive from these two.
inline constexpr const char* kTxnQueued = "osd_txn_queued";
inline constexpr const char* kOpDone = "osd_op_done";
inline constexpr const char* kSubopDone = "osd_subop_done";
inline constexpr const char* kTxcAioSubmit = "osd_txc_aio_submit";
inline constexpr const char* kTxcIoDone = "osd_txc_io_done";
inline constexpr const char* kTxcFinishIo = "osd_txc_finish_io";
inline constexpr const char* kTxcKvDone = "osd_txc_kv_done";
inline constexpr const char* kRepopReply = "osd_repop_reply";

struct UprobeDef {
  const char* label;     // cephscope_probe_attached{probe}
  const char* function;  // the function probed, or the one holding the call site
  const char* program;
  std::uint32_t needs;     // OSD_HAVE_* groups the program reads
  bool detail;             // tier 2, joins ops to BlueStore transactions (collectors.osd.detail)
  const char* callee;      // a call site: the call to this function inside FUNCTION
  const char* instead_of;  // attached only when that program could not be placed
  const char* fires;       // when, for the docs table
};

inline constexpr std::array<UprobeDef, 8> kUprobes = {{
    {"BlueStore::queue_transactions", "BlueStore::queue_transactions", kTxnQueued, OSD_HAVE_REQID,
     true, nullptr, nullptr,
     "once per transaction: each client write on the primary and each replicated write on "
     "a replica (also PG metadata transactions, which carry no op)"},
    {"PrimaryLogPG::log_op_stats", "PrimaryLogPG::log_op_stats", kOpDone, OSD_HAVE_STAMPS, false,
     nullptr, nullptr,
     "once per completed client op on the primary (reads and writes), right before the "
     "reply"},
    {"ReplicatedBackend::repop_commit", "ReplicatedBackend::repop_commit", kSubopDone,
     OSD_HAVE_STAMPS, false, nullptr, nullptr,
     "once per replicated write on a replica, right before its reply"},
    {"BlueStore::_txc_aio_submit", "BlueStore::_txc_aio_submit", kTxcAioSubmit, OSD_HAVE_TXC, true,
     nullptr, nullptr, "once per transaction with data aio (new allocations, large writes)"},
    {"BlueStore::_txc_state_proc io_done call", "BlueStore::_txc_state_proc", kTxcIoDone,
     OSD_HAVE_TXC, true, "BlueStore::BlueStoreThrottle::log_state_latency", nullptr,
     "once per transaction, on the return of the call logging io_done "
     "(log_state_latency with l_bluestore_state_io_done_lat)"},
    {"BlueStore::_txc_finish_io", "BlueStore::_txc_finish_io", kTxcFinishIo, OSD_HAVE_TXC, true,
     nullptr, kTxcIoDone, "once per transaction, when the io_done call is not found"},
    {"BlueStore::_txc_committed_kv", "BlueStore::_txc_committed_kv", kTxcKvDone, OSD_HAVE_TXC, true,
     nullptr, nullptr, "once per transaction, on bstore_kv_final"},
    {"ReplicatedBackend::do_repop_reply", "ReplicatedBackend::do_repop_reply", kRepopReply,
     OSD_HAVE_REQID | OSD_HAVE_REPLY, true, nullptr, nullptr,
     "once per replica's commit reply, on the primary (two per write to a size-3 pool)"},
}};

// MOSDOp is a template instance (_mosdop::MOSDOp<V>); its DWARF name spells the argument.
inline constexpr const char* kMOSDOp =
    "_mosdop::MOSDOp<std::vector<OSDOp, std::allocator<OSDOp> > >";

inline constexpr std::array<profile::MemberRef, 25> kMembers = {{
    {"OpRequest", "request"},
    {"OpRequest", "reqid.name._type"},
    {"OpRequest", "reqid.name._num"},
    {"OpRequest", "reqid.tid"},
    {"OpRequest", "reqid.inc"},  // records: the request id's incarnation
    {"OpRequest", "op_info.rmw_flags"},
    {"OpRequest", "dequeued_time"},
    {"OpRequest", "events"},
    {"TrackedOp::Event", "stamp"},
    {"TrackedOp::Event", "str"},
    {"Message", "recv_stamp"},
    {"Message", "throttle_stamp"},
    {"Message", "recv_complete_stamp"},
    {"Message", "header.data_len"},
    {"ReplicatedBackend::RepModify", "op"},
    {"BlueStore::TransContext", "start"},
    {"BlueStore::TransContext", "last_stamp"},
    {"PG", "pg_id.pgid.m_pool"},  // slow-op records: pool and PG
    {"PG", "pg_id.pgid.m_seed"},
    {kMOSDOp, "hobj.oid.name"},              // slow-op records: the object
    {"MOSDRepOpReply", "reqid.name._type"},  // tier 2: which replica answered, for which op
    {"MOSDRepOpReply", "reqid.name._num"},
    {"MOSDRepOpReply", "reqid.tid"},
    {"Message", "header.src.type"},  // the sender: a reply's `from` is decoded after the probe
    {"Message", "header.src.num"},
}};

// The spec the resolver is given for ceph-osd, derived from the table.
profile::ProbeSet probe_set();

// The table as Markdown, for docs/collectors/osd.md (a test keeps the two the same).
std::string probe_table_markdown();

// One uprobe to attach: the function (or call site) it goes on, its program and offset.
struct ProbePoint {
  std::string function;
  std::string program;
  std::uint64_t offset = 0;
  bool detail = false;  // tier 2 (UprobeDef::detail)
};

struct BuildPlan {
  osd_layout layout{};
  std::string missing_members;                      // for the log and the reasons
  Reason members_reason = Reason::kMembersMissing;  // kNoDebuginfo: the build had none
  std::vector<ProbePoint> points;                   // attach these
  std::vector<ProbeStatus> unavailable;             // cannot attach in this build, with why
  Cause io_done;    // why the io_done call site was not used, if not
  Cause store_off;  // why the tier-2 probes were left out, if they were
};

// The Debian package holding OBJECT's debug symbols ("ceph-osd-dbg").
std::string debug_package(const std::string& object);

// Plans the probes of one build from its profile alone (the io_done call site is one of the
// calls the resolver recorded); WHO names the target in statuses; without DETAIL the tier-2
// probes are left out (collectors.osd.detail: never). With VERIFIER (a profile from a container's
// files), every probe offset is also checked against the binary (profile/verify.h): one it denies
// is unavailable, offset_unverified.
BuildPlan plan_for(const profile::Profile& prof, const std::string& who, bool detail = true,
                   const profile::OffsetVerifier* verifier = nullptr);

// Per stage, why it does not work with these members and attached programs (ok when it does).
std::array<Cause, OSD_STAGE_COUNT> stage_gaps(const BuildPlan& plan,
                                              const std::set<std::string>& attached);

}  // namespace cephscope::osd
