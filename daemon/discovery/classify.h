// Decides whether a process is a target, and what it is called in metrics.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "discovery/proc.h"

namespace cephscope {

enum class TargetKind { kCephOsd, kRadosClient, kMatched };

const char* to_string(TargetKind kind);

struct TargetIdentity {
  TargetKind kind = TargetKind::kMatched;
  std::string ceph_daemon;  // "osd.3" for OSDs
  std::string process;      // comm or matcher name as a label value (core/label_value.h)
  std::string cluster;      // --cluster, when given
  std::string fsid;         // validated UUID, when known
  std::string conf_path;    // -c/--conf, when given

  // Series identity: the labels that name the target in metrics.
  [[nodiscard]] std::string key() const { return ceph_daemon + "\x1f" + process; }
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

// Reads the fsid a ceph-osd runs with: --fsid, else its data dir's ceph_fsid, else its
// ceph.conf; every file read through the process's own root and validated.
std::string find_fsid(const ProcReader& proc, pid_t pid, const OsdArgs& args);

class Classifier {
 public:
  Classifier(const ProcReader& proc, const Config::Discovery& config)
      : proc_(proc), config_(config) {}
  [[nodiscard]] std::optional<TargetIdentity> classify(const ProcessInfo& info) const;

 private:
  const ProcReader& proc_;
  const Config::Discovery& config_;
};

}  // namespace cephscope
