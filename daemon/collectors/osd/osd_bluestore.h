// The bluestore layer of the OSD collector: the bytes BlueStore and BlueFS write to their block
// device, by kind, from uprobes on KernelDevice's write functions (bpf/osd_bluestore.bpf.h).
// Its own probe set, bluestore-io, so that a build's osd-stages profile (shipped or cached)
// stays valid whatever this set asks; a build whose bluestore-io profile lacks a function or a
// member has the layer unavailable with the reason. See docs/collectors/osd.md.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "bpf/osd.h"
#include "collectors/collector.h"
#include "collectors/metric_sink.h"
#include "collectors/osd/osd_probes.h"
#include "collectors/osd/osd_stats_slots.h"
#include "collectors/status.h"
#include "profile/probe_set.h"
#include "profile/profile.h"
#include "profile/verify.h"

namespace cephscope::osd {

// The `kind` label, by enum cephscope_bs_kind.
inline constexpr std::array<const char*, OSD_BS_KIND_COUNT> kStoreKinds = {
    "data", "deferred", "wal", "bluefs", "other"};

inline constexpr const char* kStoreSet = "bluestore-io";
inline constexpr const char* kStoreAioWrite = "osd_bs_aio_write";
inline constexpr const char* kStoreWrite = "osd_bs_write";

struct StoreProbeDef {
  const char* function;
  const char* program;
  const char* fires;  // when, for the docs table
};

inline constexpr std::array<StoreProbeDef, 2> kStoreProbes = {{
    {"KernelDevice::aio_write", kStoreAioWrite,
     "once per device write BlueStore or BlueFS queues: a transaction's new data, a deferred "
     "batch's writes, each BlueFS flush (RocksDB's WAL, its SST files, BlueFS's log)"},
    {"KernelDevice::write", kStoreWrite,
     "once per synchronous device write (BlueFS's superblock, bluefs_sync_write); rare"},
}};

// The bufferlist's inline namespace is part of its DWARF name (v15_2_0 from Octopus on).
inline constexpr std::array<profile::MemberRef, 4> kStoreMembers = {{
    {"ceph::buffer::v15_2_0::list", "_len"},
    {"IOContext", "priv"},
    {"BlueStore::TransContext", "ioc"},
    {"BlueStore::DeferredBatch", "ioc"},
}};

// The spec the resolver is given for the layer, derived from the tables above.
profile::ProbeSet store_probe_set();

// The layer's probes and members as Markdown, for docs/collectors/osd.md (a test keeps them
// the same).
std::string store_table_markdown();

struct StorePlan {
  std::vector<ProbePoint> points;        // attach these (never tier 2)
  std::vector<ProbeStatus> unavailable;  // cannot attach in this build, with why
  Cause why;                             // why the layer is not measured, if it is not
};

// Plans the layer in one build from its bluestore-io profile: sets LAYOUT's offsets and
// OSD_HAVE_BS_IO when every member resolved. WHO names the target in statuses; with VERIFIER
// (a profile from a container's files) every offset is checked against the binary.
StorePlan plan_store(const profile::Profile& prof, const std::string& who, osd_layout& layout,
                     const profile::OffsetVerifier* verifier = nullptr);

// A plan for a build whose bluestore-io profile could not be had: every probe unavailable.
StorePlan store_unavailable(const std::string& who, const Cause& why);

// Why the layer is not measured with these programs attached (ok when it is): the aio probe
// carries every kind; the synchronous one only BlueFS's rare writes.
Cause store_gap(const StorePlan& plan, const std::set<std::string>& attached);

// cephscope_layer_bytes_total{layer="bluestore", kind} and cephscope_bluestore_writes_total
// {kind} of every OSD in TARGETS: the counters of the osd_bs_bytes hash (HASH_FD) and those in
// the stats slots, summed over CPUs.
Status put_store_layer(MetricSink& out, const TargetLabelMap& targets, int hash_fd,
                       const OsdStatsSlots& slots);
// cephscope_layer_available{layer="bluestore", reason}: 1 when the OSD's layer is measured.
void put_store_status(MetricSink& out, const Labels& osd, const Cause& gap);

}  // namespace cephscope::osd
