// The rados collector's probe table: the client side of an op in a librados process (Objecter
// send, reply, finish), the members its programs read, and the plan for one library build.
// See docs/collectors/rados.md.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "bpf/rados.h"
#include "collectors/status.h"
#include "profile/probe_set.h"
#include "profile/profile.h"
#include "profile/store.h"
#include "profile/verify.h"

namespace cephscope::rados {

struct UprobeDef {
  const char* function;
  const char* program;  // its SEC() in bpf/rados.bpf.c
  std::uint32_t probe;  // enum cephscope_rados_probe: where its hits find their build
  std::uint32_t needs;  // RADOS_HAVE_* groups the program reads
  const char* fires;    // when, for the docs
};

inline constexpr std::array<UprobeDef, 3> kUprobes = {{
    {"Objecter::_send_op", "rados_send", RADOS_PROBE_SEND, RADOS_HAVE_OP,
     "each send of an op; the first send starts its latency"},
    {"Objecter::handle_osd_op_reply", "rados_reply", RADOS_PROBE_REPLY, RADOS_HAVE_OP,
     "each reply from an OSD; keeps the reply's result for the finish"},
    {"Objecter::_finish_op", "rados_finish", RADOS_PROBE_FINISH, RADOS_HAVE_OP,
     "once per op, when it completes, times out or is cancelled"},
}};

// Ceph's proposed Objecter markers (ceph/ceph pull request 61495, not in any release): where
// a library build carries both, they replace the send and finish functions and need no debug
// info. Matched by name in any provider (the proposal fixes none); arguments from 1.
struct MarkerDef {
  const char* name;
  const char* replaces;  // the function whose stage it carries
  const char* program;   // its SEC() in bpf/rados.bpf.c
  std::uint32_t marker;  // enum cephscope_rados_marker
  unsigned tid_arg;      // the op's tid
  unsigned ops_arg;      // its OSDOps as Ceph prints them; 0: not read
};

inline constexpr std::array<MarkerDef, 2> kMarkers = {{
    {"objecter_send_op", "Objecter::_send_op", "rados_send_marker", RADOS_MARKER_SEND, 1, 5},
    {"objecter_finish_op", "Objecter::_finish_op", "rados_finish_marker", RADOS_MARKER_FINISH, 1,
     0},
}};

// Objecter::Op::ops is a boost small_vector: its data pointer and size are the vector
// holder's first two members in every boost release Debian ships.
// librados's client class, in the inline namespace its symbols carry.
inline constexpr const char* kRadosClient = "librados::v14_2_0::RadosClient";

inline constexpr std::array<profile::MemberRef, 20> kMembers = {{
    {"Objecter::Op", "attempts"},
    {"Objecter::Op", "target.base_oloc.pool"},
    {"Objecter::Op", "target.flags"},
    {"Objecter::Op", "ops.m_holder.m_start"},
    {"Objecter::Op", "ops.m_holder.m_size"},
    {"Objecter::Op", "tid"},
    {"Objecter::Op", "target.osd"},
    {"Objecter::Op", "target.base_oid.name"},
    {"Objecter::Op", "target.pgid.m_seed"},
    {"OSDOp", "op.op"},
    {"OSDOp", "op.extent.length"},
    {"MOSDOpReply", "result"},
    // a slow op's request id and cluster, read at the finish of a slow op only: the client's
    // global id (its entity client.<gid>) where the Objecter's MonClient keeps it, through the
    // librados client that holds that MonClient where the build's DWARF has no MonClient; the
    // incarnation; the fsid of the client's OSD map
    {"Objecter", "monc"},
    {"Objecter", "client_inc"},
    {"Objecter", "osdmap"},
    {"OSDMap", "fsid"},
    {"MonClient", "global_id"},
    {kRadosClient, "monclient"},
    {kRadosClient, "instance_id"},
    {kRadosClient, "objecter"},
}};

// librados.so.2 and librbd.so.1 each carry their own hidden copy of Objecter in Pacific and
// Reef (local symbols, seen through librados2-dbg and librbd1-dbg); in Tentacle Objecter lives
// in libceph-common.so.2 alone. A librbd client sends its image IO through librbd's copy and
// handles the replies in librados's (the Objecter object, and its dispatch table, is made
// there). Probes go on every library of the process whose profile has the functions: a send
// and its finish meet in the in-flight map whichever copies they ran in.
inline constexpr std::array<const char*, 3> kLibraries = {"librados.so.2", "librbd.so.1",
                                                          "libceph-common.so.2"};

// The spec the resolver is given for the client libraries, derived from the table.
profile::ProbeSet probe_set();

struct ProbePoint {
  std::string function;  // the status's probe: a function, or a marker's "provider:name"
  std::string program;
  std::uint32_t probe = 0;  // enum cephscope_rados_probe, or for a marker cephscope_rados_marker
  std::uint64_t offset = 0;
  std::optional<rados_marker_site> marker;  // a marker site: its arguments
  std::uint64_t semaphore_offset = 0;       // a marker's semaphore; 0: none
};

struct BuildPlan {
  rados_layout layout{};
  std::string missing_members;  // for the log and the reasons
  std::vector<ProbePoint> points;
  std::vector<ProbeStatus> unavailable;
};

// Plans the probes of one library build; WHO names the target in statuses. With VERIFIER (a
// profile from a container's files) every offset is also checked against the library: one it
// denies is unavailable, offset_unverified.
BuildPlan plan_for(const profile::Profile& prof, const std::string& who,
                   const profile::OffsetVerifier* verifier = nullptr);

// The plan of a library build no function profile covers: each function unavailable, WHY.
BuildPlan unavailable_plan(const std::string& who, const Cause& why);

// Puts the send and finish stages on the Objecter markers of MARKERS (the build's
// .note.stapsdt) where it carries both with readable arguments: their function points and
// statuses go. Returns what it did, for the log: "" when the build has neither marker.
std::string use_markers(BuildPlan& plan, const std::vector<profile::Marker>& markers);

// The plan of one library build: its function profile's (FUNCTIONS), checked against the
// library at HOST_PATH when the profile comes from a container's files, with the send and
// finish stages on Ceph's Objecter markers where the build carries them (MARKERS); empty, with
// the statuses in REFUSED, when neither gives a probe. PROFILE_LINE: where each came from.
std::optional<BuildPlan> plan_library(const std::string& who, const std::string& lib,
                                      const std::string& host_path,
                                      const Result<profile::LoadedProfile>& functions,
                                      const Result<profile::LoadedProfile>& markers,
                                      std::vector<ProbeStatus>& refused, std::string& profile_line);

// What a plan attaches, a line per probe point or unavailable stage, for `profile show`:
// "  Objecter::_send_op  marker objecter:objecter_send_op at 0x11ae, semaphore 0x4062".
std::string plan_summary(const BuildPlan& plan);

// The label values of enum cephscope_rados_op and enum cephscope_rados_error.
inline constexpr std::array<const char*, RADOS_OP_COUNT> kOps = {"read", "write", "other"};
inline constexpr std::array<const char*, RADOS_ERR_COUNT> kErrorClasses = {
    "not_found", "exists",    "permission",  "no_space",
    "timeout",   "cancelled", "blocklisted", "other"};

}  // namespace cephscope::rados
