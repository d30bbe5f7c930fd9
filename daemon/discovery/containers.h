// Which container (and Kubernetes pod) a process runs in, told from the host's side.
//
// The process's cgroup (/proc/PID/cgroup, written by the kernel) names the runtime's
// container id, a Kubernetes pod's UID and a systemd unit such as cephadm's
// ceph-<fsid>@osd.N.service. The names people use come from the runtime's own records on the
// host, never from files in the container: podman's containers.json, docker's
// config.v2.json, and the kubelet's /var/log/pods/<namespace>_<pod>_<uid> directories.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"

namespace cephscope {

struct CgroupFacts {
  std::string runtime;    // "podman", "docker", "containerd", "cri-o", "kubernetes"; "" on the host
  std::string id;         // the container's id (64 hex digits)
  std::string pod_uid;    // Kubernetes pod UID, when the cgroup is a pod's
  std::string unit;       // systemd unit, e.g. ceph-<fsid>@osd.3.service
  std::string unit_fsid;  // the fsid in a cephadm unit's name, when it is one

  [[nodiscard]] bool in_container() const { return !id.empty(); }
};

// Reads the content of /proc/PID/cgroup (cgroup v1 lines and the v2 "0::" line alike); the
// innermost container wins.
CgroupFacts parse_cgroup(std::string_view text);

// The labels of cephscope_target_info that place a target (docs/metrics.md#containers).
// Named target_* so that they never collide with the container/pod/namespace labels that
// Prometheus Operator puts on its own targets when it scrapes with honorLabels.
struct ContainerLabels {
  std::string container;  // the runtime's name for it, else its short id
  std::string pod;
  std::string pod_namespace;
};

// The size caps on the runtimes' records read here.
inline constexpr std::size_t kMaxPodmanContainersJson = std::size_t{16} << 20;
inline constexpr std::size_t kMaxDockerConfigJson = std::size_t{1} << 20;

// Names the container the facts point at. Reads host files only; a record that is missing,
// too large or malformed leaves the container named by its short id. Reads may block on the
// host's disks: the daemon loop never calls this (discovery's lookup thread does).
ContainerLabels container_labels(const CgroupFacts& facts, const ContainerStateDirs& dirs);

}  // namespace cephscope
