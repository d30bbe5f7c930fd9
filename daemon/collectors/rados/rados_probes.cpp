#include "collectors/rados/rados_probes.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "collectors/marker_args.h"

namespace cephscope::rados {

profile::ProbeSet probe_set() {
  profile::ProbeSet set;
  set.name = "librados";
  set.description = "Client side of an op in a librados process: Objecter send, reply, finish.";
  set.objects.assign(kLibraries.begin(), kLibraries.end());
  for (const auto& u : kUprobes) {
    set.functions.emplace_back(u.function);
  }
  profile::add_members(set, kMembers);
  set.digest = profile::probe_set_digest(set);
  return set;
}

namespace {

// The members a slow op's record reads for its request id and cluster (the table's last
// eight). Optional: each build has one of the two routes to the global id (librbd's copy of
// the Objecter neither: it only sends), and no stage needs them.
void read_request_id_members(const profile::Profile& p, const profile::MemberOffsets& off,
                             rados_layout& l) {
  const bool monc = off.optional("Objecter", "monc", l.objecter_monc);
  if (monc && off.optional("MonClient", "global_id", l.monc_global_id)) {
    l.have |= RADOS_HAVE_GID_MONC;
  } else if (monc && off.optional(kRadosClient, "monclient", l.client_monclient) &&
             off.optional(kRadosClient, "instance_id", l.client_instance_id) &&
             off.optional(kRadosClient, "objecter", l.client_objecter)) {
    l.have |= RADOS_HAVE_GID_RC;
  }
  if (off.optional("Objecter", "client_inc", l.objecter_inc)) {
    l.have |= RADOS_HAVE_INC;
  }
  // a raw pointer, or a unique_ptr with an empty deleter (the size of the pointer it holds)
  const profile::MemberEntry* osdmap = p.member("Objecter", "osdmap");
  if (off.optional("Objecter", "osdmap", l.objecter_osdmap) && osdmap != nullptr &&
      osdmap->size == 8 && off.optional("OSDMap", "fsid", l.osdmap_fsid)) {
    l.have |= RADOS_HAVE_FSID;
  }
}

rados_layout layout_of(const profile::Profile& p, std::string& missing) {
  rados_layout l{};
  profile::MemberOffsets off(p);
  const bool attempts = off("Objecter::Op", "attempts", l.op_attempts);
  const bool pool = off("Objecter::Op", "target.base_oloc.pool", l.op_pool);
  if (off("Objecter::Op", "target.flags", l.op_flags) && attempts && pool) {
    l.have |= RADOS_HAVE_OP;
  }
  const auto* osdop = p.type("OSDOp");
  const bool vec = off("Objecter::Op", "ops.m_holder.m_start", l.op_ops_start) &&
                   off("Objecter::Op", "ops.m_holder.m_size", l.op_ops_size);
  // The programs read the vector's pointer and size in one go, and ceph_osd_op's head (code
  // at 0, extent length at 14: the wire format's packing) in another.
  if (off("OSDOp", "op.op", l.osdop_code) && off("OSDOp", "op.extent.length", l.osdop_length) &&
      vec && l.op_ops_size == l.op_ops_start + 8 && l.osdop_length == l.osdop_code + 14 &&
      osdop != nullptr && osdop->status == profile::ItemStatus::kOk && osdop->size > 0) {
    l.osdop_size = static_cast<std::uint32_t>(osdop->size);
    l.have |= RADOS_HAVE_BYTES;
  }
  if (off("MOSDOpReply", "result", l.reply_result)) {
    l.have |= RADOS_HAVE_RESULT;
  }
  if (off("Objecter::Op", "target.base_oid.name", l.op_object)) {
    l.have |= RADOS_HAVE_OBJECT;
  }
  const bool tid = off("Objecter::Op", "tid", l.op_tid);
  const bool osd = off("Objecter::Op", "target.osd", l.op_osd);
  if (off("Objecter::Op", "target.pgid.m_seed", l.op_pg_seed) && tid && osd) {
    l.have |= RADOS_HAVE_IDS;
  }
  read_request_id_members(p, off, l);
  missing = off.missing();
  return l;
}

}  // namespace

BuildPlan plan_for(const profile::Profile& prof, const std::string& who,
                   const profile::OffsetVerifier* verifier) {
  BuildPlan plan;
  plan.layout = layout_of(prof, plan.missing_members);
  const Reason members_reason =
      prof.source == "symtab" ? Reason::kNoDebuginfo : Reason::kMembersMissing;
  for (const auto& u : kUprobes) {
    auto f = profile::out_of_line(prof, u.function);
    if (!f.ok()) {
      plan.unavailable.push_back(
          {u.function, who, false, cause_of(f.error(), Reason::kSymbolNotFound)});
      continue;
    }
    const std::uint64_t offset = profile::entry_offset(**f);
    if (verifier != nullptr) {
      if (auto checked = verifier->check(**f, offset); !checked.ok()) {
        plan.unavailable.push_back(
            {u.function, who, false, cause_of(checked.error(), Reason::kOffsetUnverified)});
        continue;
      }
    }
    if ((plan.layout.have & u.needs) != u.needs) {
      plan.unavailable.push_back(
          {u.function, who, false, {members_reason, "members missing: " + plan.missing_members}});
    } else {
      plan.points.push_back({u.function, u.program, u.probe, offset, std::nullopt, 0});
    }
  }
  return plan;
}

BuildPlan unavailable_plan(const std::string& who, const Cause& why) {
  BuildPlan plan;
  for (const auto& u : kUprobes) {
    plan.unavailable.push_back({u.function, who, false, why});
  }
  return plan;
}

std::string use_markers(BuildPlan& plan, const std::vector<profile::Marker>& markers) {
  std::vector<ProbePoint> points;
  std::string found;
  std::string missing;
  for (const auto& def : kMarkers) {
    std::vector<const profile::Marker*> sites;
    for (const auto& m : markers) {
      if (m.name == def.name) {
        sites.push_back(&m);
      }
    }
    if (sites.empty()) {
      missing += std::string(missing.empty() ? "" : ", ") + def.name;
      continue;
    }
    for (const profile::Marker* m : sites) {
      auto tid = marker_arg_spec(*m, def.tid_arg);
      auto ops = marker_arg_spec(*m, def.ops_arg);
      if (!tid.ok() || !ops.ok()) {
        return fmt::format("markers not used: {}:{} at {:#x}: {}", m->provider, m->name,
                           m->file_offset, (!tid.ok() ? tid : ops).error().message);
      }
      ProbePoint p;
      p.function = m->provider + ":" + m->name;
      p.program = def.program;
      p.probe = def.marker;
      p.offset = m->file_offset;
      p.marker = rados_marker_site{*tid, *ops};
      p.semaphore_offset = m->semaphore_offset;
      points.push_back(std::move(p));
    }
    found += std::string(found.empty() ? "" : ", ") + sites.front()->provider + ":" + def.name;
  }
  if (found.empty()) {
    return "";
  }
  if (!missing.empty()) {
    return "markers not used: " + found + " without " + missing;
  }
  // The stages the markers carry leave the function plan, whatever it found.
  auto replaced = [](const std::string& function) {
    return std::any_of(kMarkers.begin(), kMarkers.end(),
                       [&](const MarkerDef& d) { return function == d.replaces; });
  };
  std::erase_if(plan.points, [&](const ProbePoint& p) { return replaced(p.function); });
  std::erase_if(plan.unavailable, [&](const ProbeStatus& st) { return replaced(st.probe); });
  plan.points.insert(plan.points.end(), points.begin(), points.end());
  return "send and finish at markers " + found + " (" + std::to_string(points.size()) +
         " sites, no debug info needed)";
}

std::string plan_summary(const BuildPlan& plan) {
  std::string out;
  for (const auto& p : plan.points) {
    if (!p.marker) {
      out += fmt::format("  {:<36} function at {:#x}\n", p.function, p.offset);
      continue;
    }
    const auto* def = std::find_if(kMarkers.begin(), kMarkers.end(),
                                   [&](const MarkerDef& d) { return d.marker == p.probe; });
    out +=
        fmt::format("  {:<36} marker {} at {:#x}{}\n", def->replaces, p.function, p.offset,
                    p.semaphore_offset != 0 ? fmt::format(", semaphore {:#x}", p.semaphore_offset)
                                            : std::string());
  }
  for (const auto& st : plan.unavailable) {
    out += fmt::format("  {:<36} unavailable ({}): {}\n", st.probe, to_string(st.why.reason),
                       st.why.detail);
  }
  return out;
}

std::optional<BuildPlan> plan_library(const std::string& who, const std::string& lib,
                                      const std::string& host_path,
                                      const Result<profile::LoadedProfile>& functions,
                                      const Result<profile::LoadedProfile>& markers,
                                      std::vector<ProbeStatus>& refused,
                                      std::string& profile_line) {
  std::optional<Cause> unusable;  // why the function profile gives no probe at all
  BuildPlan plan;
  if (!functions.ok()) {
    unusable = Cause{reason_of(functions.error(), Reason::kProfileUnavailable),
                     "no probe profile: " + functions.error().message};
  } else {
    profile_line = fmt::format("profile {} ({}) from {}", functions->profile.build_id,
                               profile::to_string(functions->origin), functions->location);
    // A profile from the container's own files steers a probe only where this library agrees.
    std::optional<profile::OffsetVerifier> verifier;
    if (functions->from_target_files) {
      auto opened = profile::OffsetVerifier::open(host_path);
      if (opened.ok()) {
        verifier = std::move(opened).value();
      } else {
        unusable =
            Cause{Reason::kOffsetUnverified,
                  "profile from the container's files not checked: " + opened.error().message};
      }
    }
    if (!unusable) {
      plan = plan_for(functions->profile, who, verifier ? &*verifier : nullptr);
    }
  }
  if (unusable) {
    plan = unavailable_plan(who, *unusable);
  }
  if (markers.ok()) {
    const std::string used = use_markers(plan, markers->profile.markers);
    if (!used.empty()) {
      spdlog::info("rados: {} {}: {}", who, lib, used);
      profile_line += (profile_line.empty() ? "" : "; ") + used;
    }
  }
  if (!plan.points.empty()) {
    return plan;
  }
  // Expected for the library whose Objecter the client does not call (Tentacle's
  // librados.so.2 has none): said only while no library of the client had the probes.
  if (unusable) {
    refused.push_back({lib, who, false, *unusable});
    return std::nullopt;
  }
  for (auto st : plan.unavailable) {
    st.why.detail = lib + ": " + st.why.detail;
    refused.push_back(std::move(st));
  }
  return std::nullopt;
}

}  // namespace cephscope::rados
