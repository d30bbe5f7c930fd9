// Decides whether a process is a target, and what it is called in metrics.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/result.h"
#include "discovery/containers.h"
#include "discovery/proc.h"

namespace cephscope {

enum class TargetKind { kCephOsd, kRadosClient, kMatched };

const char* to_string(TargetKind kind);

struct TargetIdentity {
  TargetKind kind = TargetKind::kMatched;
  std::string ceph_daemon;    // "osd.3" for OSDs
  std::string process;        // comm or matcher name as a label value (core/label_value.h)
  std::string cluster;        // --cluster, when given
  std::string fsid;           // validated UUID, when known
  std::string conf_path;      // -c/--conf, when given
  CgroupFacts cgroup;         // what its cgroup says (discovery/containers.h)
  ContainerLabels container;  // where it runs: only on cephscope_target_info, never a key

  // Series identity: the labels that name the target in metrics (target_labels()). Two
  // clusters on one host each have an osd.0: the fsid tells them apart.
  [[nodiscard]] std::string key() const { return fsid + "\x1f" + ceph_daemon + "\x1f" + process; }
};

// What the ceph-osd command line says: --id/-i N, -n/--name osd.N, --cluster, --fsid, -c.
struct OsdArgs {
  std::optional<unsigned> id;
  std::string cluster;
  std::string fsid;
  std::string conf_path;
  std::string osd_data;
};
OsdArgs parse_osd_args(const std::vector<std::string>& argv);

bool is_uuid(const std::string& text);

// The caps on the files find_fsid() reads: a ceph_fsid is 37 bytes, a ceph.conf a few KiB.
inline constexpr std::size_t kMaxFsidFileBytes = 64;
inline constexpr std::size_t kMaxConfBytes = std::size_t{256} * 1024;

struct FsidLookup {
  std::string fsid;             // validated UUID, or "" when unknown
  std::vector<Error> refusals;  // files refused on the way (reason set); absent ones are not
};

// Reads the fsid a ceph-osd runs with: --fsid, else the fsid in its cephadm unit's name
// (its cgroup), else its data dir's ceph_fsid, else its ceph.conf; every file read inside
// the process's own root (ProcReader::read_in_root) and validated. The files are the target's
// choice, and reading them may wait on its file system: the daemon loop never calls this (Discovery
// runs it on a thread of its own).
FsidLookup find_fsid(const ProcReader& proc, pid_t pid, const OsdArgs& args,
                     const CgroupFacts& cgroup = {});

class Classifier {
 public:
  Classifier(const ProcReader& proc, const Config::Discovery& config)
      : proc_(proc), config_(config) {}
  // Reads only /proc (argv, exe, maps), never a file the process names: an OSD's fsid is
  // set here only from --fsid (find_fsid() does the rest).
  [[nodiscard]] std::optional<TargetIdentity> classify(const ProcessInfo& info) const;

 private:
  const ProcReader& proc_;
  const Config::Discovery& config_;
};

}  // namespace cephscope
