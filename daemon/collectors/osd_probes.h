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
#include "profile/profile.h"

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

// The probe-set spec resolved for each ceph-osd build (functions and members below).
extern const char* const kProbeSet;

// One uprobe to attach: the function (or call site) it goes on, its program and offset.
struct ProbePoint {
  std::string function;
  std::string program;
  std::uint64_t offset = 0;
};

struct BuildPlan {
  osd_layout layout{};
  std::string missing_members;           // for the log and the reasons
  std::vector<ProbePoint> points;        // attach these
  std::vector<ProbeStatus> unavailable;  // cannot attach in this build, with why
  std::string io_done_note;              // why the io_done call site was not used, if not
  std::string store_off;                 // why the BlueStore probes were left out, if they were
};

// Plans the probes of one build. BINARY is the file the profile describes (read for the
// io_done call site); WHO names the target in statuses; without STORE_STAGES the BlueStore
// probes are left out (collectors.osd.bluestore_stages: false).
BuildPlan plan_for(const profile::Profile& prof, const std::string& binary, const std::string& who,
                   bool store_stages = true);

// Per stage, why it does not work with these members and attached programs ("" when it does).
std::array<std::string, OSD_STAGE_COUNT> stage_gaps(const BuildPlan& plan,
                                                    const std::set<std::string>& attached);

}  // namespace cephscope::osd
