#include "collectors/osd/osd_bluestore.h"

#include <algorithm>
#include <map>
#include <span>
#include <utility>

#include "libbpf/maps.h"

namespace cephscope::osd {

using profile::entry_offset;
using profile::out_of_line;

profile::ProbeSet store_probe_set() {
  profile::ProbeSet set;
  set.name = kStoreSet;
  set.description =
      "OSD bluestore layer: device writes of BlueStore and BlueFS (KernelDevice), by kind.";
  set.objects = {"ceph-osd"};
  for (const auto& p : kStoreProbes) {
    set.functions.emplace_back(p.function);
  }
  profile::add_members(set, kStoreMembers);
  set.digest = profile::probe_set_digest(set);
  return set;
}

std::string store_table_markdown() {
  std::string out = "| program | where | fires |\n|---|---|---|\n";
  for (const auto& p : kStoreProbes) {
    out.append("| `").append(p.program).append("` | `").append(p.function).append("` | ");
    out.append(p.fires).append(" |\n");
  }
  out += "\nMembers read: ";
  for (std::size_t i = 0; i < kStoreMembers.size(); ++i) {
    out += std::string(i == 0 ? "" : ", ") + "`" + kStoreMembers[i].type +
           "::" + kStoreMembers[i].path + "`";
  }
  return out + ".\n";
}

namespace {

// The members' offsets into LAYOUT; the missing ones named in MISSING.
bool store_members(const profile::Profile& prof, osd_layout& layout, std::string& missing) {
  profile::MemberOffsets off(prof);
  // Each looked up, so that missing() names every one that is absent.
  const bool len = off(kStoreMembers[0].type, kStoreMembers[0].path, layout.bl_len);
  const bool priv = off(kStoreMembers[1].type, kStoreMembers[1].path, layout.ioc_priv);
  const bool txc = off(kStoreMembers[2].type, kStoreMembers[2].path, layout.txc_ioc);
  const bool deferred = off(kStoreMembers[3].type, kStoreMembers[3].path, layout.deferred_ioc);
  missing = off.missing();
  // Two owners at one offset could not be told apart.
  return len && priv && txc && deferred && layout.txc_ioc != layout.deferred_ioc;
}

}  // namespace

StorePlan plan_store(const profile::Profile& prof, const std::string& who, osd_layout& layout,
                     const profile::OffsetVerifier* verifier) {
  StorePlan plan;
  layout.have &= ~OSD_HAVE_BS_IO;
  std::string missing;
  if (store_members(prof, layout, missing)) {
    layout.have |= OSD_HAVE_BS_IO;
  } else {
    const Reason reason = prof.source == "symtab" ? Reason::kNoDebuginfo : Reason::kMembersMissing;
    std::string detail = "members missing: " + (missing.empty() ? "ioc offsets collide" : missing);
    if (reason == Reason::kNoDebuginfo) {
      detail += "; no debuginfo for " + prof.object + " build-id " + prof.build_id +
                ": install its debug symbols (Debian: " + debug_package(prof.object) +
                ") or supply a profile made where they are";
    }
    plan.why = {reason, detail};
  }
  for (const auto& p : kStoreProbes) {
    Result<std::uint64_t> offset = make_error(ErrorKind::kNotFound, "");
    if (auto f = out_of_line(prof, p.function); !f.ok()) {
      offset = f.error();
    } else {
      offset = entry_offset(**f);
      if (verifier != nullptr) {
        if (Status checked = verifier->check(**f, *offset); !checked.ok()) {
          offset = checked.error();
        }
      }
    }
    if (!offset.ok()) {
      plan.unavailable.push_back(
          {p.function, who, false, cause_of(offset.error(), Reason::kSymbolNotFound)});
    } else if (!plan.why.ok()) {
      plan.unavailable.push_back({p.function, who, false, plan.why});
    } else {
      plan.points.push_back({p.function, p.program, *offset, false});
    }
  }
  return plan;
}

StorePlan store_unavailable(const std::string& who, const Cause& why) {
  StorePlan plan;
  plan.why = why;
  for (const auto& p : kStoreProbes) {
    plan.unavailable.push_back({p.function, who, false, why});
  }
  return plan;
}

Cause store_gap(const StorePlan& plan, const std::set<std::string>& attached) {
  if (!plan.why.ok()) {
    return plan.why;
  }
  if (attached.contains(kStoreAioWrite)) {
    return {};
  }
  const auto aio =
      std::find_if(plan.unavailable.begin(), plan.unavailable.end(),
                   [](const ProbeStatus& s) { return s.probe == kStoreProbes[0].function; });
  if (aio != plan.unavailable.end()) {
    return aio->why;
  }
  return {Reason::kProbeNotAttached, std::string("probe ") + kStoreAioWrite + " not attached"};
}

namespace {

void put_store_series(MetricSink& out, const Labels& target, std::uint32_t kind,
                      const osd_bs_bytes& s) {
  const Labels k = target + Labels{{"kind", kStoreKinds.at(kind)}};
  out.counter("cephscope_layer_bytes_total", "Bytes seen at each layer of the IO path, per target.",
              k + Labels{{"layer", "bluestore"}, {"direction", "write"}},
              static_cast<double>(s.bytes));
  out.counter("cephscope_bluestore_writes_total",
              "Device writes BlueStore and BlueFS queued (KernelDevice), by kind.", k,
              static_cast<double>(s.writes));
}

}  // namespace

Status put_store_layer(MetricSink& out, const TargetLabelMap& targets, int hash_fd,
                       const OsdStatsSlots& slots) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, osd_bs_bytes> sums;
  auto add = [&](std::uint32_t target, std::uint32_t kind, std::span<const osd_bs_bytes> cpus) {
    auto& s = sums[{target, kind}];
    for (const auto& c : cpus) {
      s.bytes += c.bytes;
      s.writes += c.writes;
    }
  };
  Status walked = for_each_percpu<osd_bs_key, osd_bs_bytes>(
      hash_fd, [&](const osd_bs_key& k, auto cpus) { add(k.target, k.kind, cpus); });
  if (walked.ok()) {
    walked = slots.for_each_store(add);
  }
  if (!walked.ok()) {
    return walked;
  }
  for (const auto& [key, s] : sums) {
    if (auto labels = targets.find(key.first);
        labels != targets.end() && key.second < OSD_BS_KIND_COUNT) {
      put_store_series(out, labels->second, key.second, s);
    }
  }
  return ok_status();
}

void put_store_status(MetricSink& out, const Labels& osd, const Cause& gap) {
  out.gauge("cephscope_layer_available",
            "1 when the layer is measured for this target; reason says why not.",
            osd + Labels{{"layer", "bluestore"}, {"reason", std::string(to_string(gap.reason))}},
            gap.ok() ? 1 : 0);
}

}  // namespace cephscope::osd
