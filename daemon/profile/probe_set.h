// Probe-set spec: what to resolve for a kind of target (the OSD, a librados client): function
// names, types with member paths, direct calls of one function inside another. Each uprobe
// collector derives its set from its probe table (collectors/osd/osd_probes.cpp); a set can also be
// given as a JSON file to the profile command.
//
//   {"schema": "cephscope-probe-set", "schema_version": 1, "name": "osd",
//    "objects": ["ceph-osd"],
//    "functions": ["OSD::dequeue_op", ...],
//    "types": [{"name": "OpRequest", "members": ["request", "reqid.name._num"]}],
//    "calls": [{"function": "BlueStore::_txc_state_proc", "callee": "log_state_latency"}]}
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cephscope::profile {

inline constexpr int kProbeSetSchemaVersion = 1;

struct TypeSpec {
  std::string name;                  // qualified: "BlueStore::TransContext"
  std::vector<std::string> members;  // dotted paths, through bases: "reqid.name._num"
};

struct CallSpec {
  std::string function;  // whose out-of-line body holds the calls
  std::string callee;
};

struct ProbeSet {
  std::string name;
  std::string description;
  std::vector<std::string> objects;  // file names the set applies to: "ceph-osd"
  std::vector<std::string> functions;
  std::vector<TypeSpec> types;
  std::vector<CallSpec> calls;
  bool markers = false;  // list every static marker (.note.stapsdt) of the binary
  std::string digest;    // of the canonical content: a cached profile made from another
                         // version of the spec is resolved again

  // True when FILE_NAME ("librados.so.2.0.0") is one of objects (sonames match versions).
  [[nodiscard]] bool applies_to(std::string_view file_name) const;
};

// One member a collector's programs read, as its probe table names it.
struct MemberRef {
  const char* type;
  const char* path;
};

// Adds each member to its type's spec in SET (the type's first appearance orders the types).
void add_members(ProbeSet& set, std::span<const MemberRef> members);

// The set that lists every static marker of FILE_NAME and resolves nothing else.
ProbeSet markers_probe_set(const std::string& file_name);

Result<ProbeSet> parse_probe_set(std::string_view text);
Result<ProbeSet> load_probe_set(const std::string& path);
// The digest of what changes a resolved profile (functions, objects, types, members, calls).
std::string probe_set_digest(const ProbeSet& set);
// The spec as JSON that parse_probe_set() reads back to an equal set.
std::string probe_set_to_json(const ProbeSet& set);

// True for a plain C++ identifier ("_num", "TrackedOp").
bool is_identifier(std::string_view s);
// A member path: identifiers joined by '.', at most 16 of them.
bool is_member_path(std::string_view s);
// A qualified C++ name as the resolver accepts it: printable, no spaces but in templates.
bool is_qualified_name(std::string_view s);

}  // namespace cephscope::profile
