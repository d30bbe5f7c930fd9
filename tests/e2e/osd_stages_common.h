// What the OSD stage e2e tests share (tests/e2e/test_osd_stages.cpp, test_osd_profiles.cpp):
// the probe and stage names, the labels of an OSD's series, and waiting for its probes.
#pragma once

#include <sys/types.h>

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "ceph_harness.h"
#include "support/daemon_runner.h"
#include "support/metrics_text.h"

namespace cephscope::test {

// The OSD collector's probes, as cephscope_probe_attached names them: all, and tier 1's.
extern const std::vector<std::string> kProbes;
extern const std::vector<std::string> kTier1Probes;
// BlueStore's stages, in the order of Ceph's state_*_lat counters (kBlueStoreStates).
extern const std::vector<std::string> kStoreStages;
// The stages every op has: message, queue and execute.
extern const std::vector<std::string> kReadStages;
extern const std::vector<std::string> kSubopStages;
extern const std::vector<std::string> kWriteStages;

// The stage lists PARTS one after the other.
std::vector<std::string> stages(std::initializer_list<std::vector<std::string>> parts);
std::string osd_name(int id);
std::string slurp(const std::string& path);
// The labels of one OSD's series: osd.N of this cluster (another cluster's osd.N has its own).
std::map<std::string, std::string> osd_labels(const ClusterInfo& c, int id,
                                              std::map<std::string, std::string> more = {});
// Only the OSD collector, slow ops from 1 s.
std::string daemon_config();
// Every stage of every OSD is measured in this build.
void check_stages_available(const ClusterInfo& cluster, const Metrics& m);
// Waits until every probe is attached on each of the cluster's OSDs (the first OSD resolves
// the build's profile) and prints how long that took.
bool wait_for_probes(const ClusterInfo& cluster, Daemon& daemon,
                     const std::vector<std::string>& probes = kProbes);
// A daemon given the shipped profiles: every OSD gets every stage from them.
void check_shipped_profile_used(const ClusterInfo& cluster, Daemon& daemon);
// The ceph-osd of a cephadm-style container: the child of its init (podman --init).
pid_t container_osd_pid(const std::string& container);

}  // namespace cephscope::test
