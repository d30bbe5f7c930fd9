#include "app/profile_cli.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "collectors/osd/osd_bluestore.h"
#include "collectors/osd/osd_probes.h"
#include "collectors/rados/rados_probes.h"
#include "profile/elf_file.h"
#include "profile/process.h"
#include "profile/profile_json.h"
#include "profile/resolver_process.h"
#include "profile/store.h"

namespace cephscope::profile {

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string binary;
  std::string debug_file;
  std::string probe_set;
  std::string out;
  int timeout_s = 600;
  std::string object;
  bool no_inlined = false;
  std::string file;
  int pid = 0;
  std::string module;
  std::string cache_dir = StoreOptions{}.cache_dir;
  std::vector<std::string> shipped_dirs = StoreOptions{}.shipped_dirs;
  bool no_resolve = false;
  bool no_cache_write = false;
  bool json = false;
  bool markdown = false;
  bool digests = false;
};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "cephscope profile: %s\n", message.c_str());
  throw CLI::RuntimeError(1);
}

template <typename T>
T must(Result<T> r) {
  if (!r.ok()) {
    fail(r.error().message);
  }
  return std::move(r).value();
}

// The probe sets of the collectors' tables.
std::vector<ProbeSet> builtin_probe_sets() {
  return {osd::probe_set(), osd::store_probe_set(), rados::probe_set()};
}

// The probe sets to use: the one named (a built-in set, or a spec file), or the built-in
// sets that apply to FILE_NAME (all of them when it is empty).
std::vector<ProbeSet> probe_sets_for(const Options& o, const std::string& file_name) {
  std::vector<ProbeSet> out;
  for (ProbeSet& s : builtin_probe_sets()) {
    if (o.probe_set.empty() ? file_name.empty() || s.applies_to(file_name)
                            : s.name == o.probe_set) {
      out.push_back(std::move(s));
    }
  }
  if (!o.probe_set.empty() && out.empty()) {
    out.push_back(must(load_probe_set(o.probe_set)));
  }
  return out;
}

void print_summary(const Profile& p, std::FILE* f) {
  std::fprintf(f, "object      %s\nbuild-id    %s\nsource      %s%s%s\nprobe set   %s (%s)\n",
               p.object.c_str(), p.build_id.c_str(), p.source.c_str(),
               p.debug_file.empty() ? "" : " ", p.debug_file.c_str(), p.probe_set.c_str(),
               p.probe_set_digest.c_str());
  std::fprintf(f, "generated   %s by %s from %s\n", p.created.c_str(), p.generator.c_str(),
               p.binary_path.c_str());
  std::fprintf(f, "\nfunctions\n");
  for (const FunctionEntry& fn : p.functions) {
    size_t inlined = 0;
    std::string where;
    for (const FunctionInstance& i : fn.instances) {
      if (i.inlined) {
        ++inlined;
        continue;
      }
      where += " " + hex_u64(i.file_offset) + "(" + i.entry_insn + (i.clone ? ",clone" : "") + ")";
    }
    std::fprintf(f, "  %-40s %-12s%s", fn.name.c_str(), std::string(to_string(fn.status)).c_str(),
                 where.c_str());
    if (inlined > 0) {
      std::fprintf(f, " +%zu inlined", inlined);
    }
    if (!fn.message.empty() && fn.status != ItemStatus::kOk) {
      std::fprintf(f, "  (%s)", fn.message.c_str());
    }
    std::fputc('\n', f);
  }
  std::fprintf(f, "\ntypes\n");
  for (const TypeEntry& t : p.types) {
    std::fprintf(f, "  %-40s %-12s", t.name.c_str(), std::string(to_string(t.status)).c_str());
    if (t.status == ItemStatus::kOk) {
      std::fprintf(f, " %" PRIu64 " B", t.size);
    } else {
      std::fprintf(f, " (%s)", t.message.c_str());
    }
    std::fputc('\n', f);
  }
  std::fprintf(f, "\nmembers\n");
  for (const MemberEntry& m : p.members) {
    const std::string name = m.type + "." + m.path;
    std::fprintf(f, "  %-40s %-12s", name.c_str(), std::string(to_string(m.status)).c_str());
    if (m.status == ItemStatus::kOk) {
      std::fprintf(f, " @%" PRIu64 " %" PRIu64 " B %s", m.offset, m.size, m.type_name.c_str());
    } else {
      std::fprintf(f, " (%s)", m.message.c_str());
    }
    std::fputc('\n', f);
  }
  if (p.markers.empty()) {
    return;
  }
  std::fprintf(f, "\nmarkers (.note.stapsdt)\n");
  for (const Marker& m : p.markers) {
    const std::string name = m.provider + ":" + m.name;
    std::fprintf(f, "  %-40s %s%s%s  args: %s%s%s\n", name.c_str(), hex_u64(m.file_offset).c_str(),
                 m.semaphore_offset != 0 ? " semaphore " : "",
                 m.semaphore_offset != 0 ? hex_u64(m.semaphore_offset).c_str() : "",
                 m.arg_spec.empty() ? "(none)" : m.arg_spec.c_str(),
                 m.args_error.empty() ? "" : " -- not decoded: ", m.args_error.c_str());
  }
}

void generate(const Options& o) {
  const auto sets = probe_sets_for(o, fs::path(o.binary).filename().string());
  if (sets.size() != 1) {
    fail(sets.empty() ? "no probe set applies to " + o.binary + " (use --probe-set)"
                      : "several probe sets apply to " + o.binary + " (use --probe-set)");
  }
  ResolveRequest req;
  req.binary = fs::absolute(o.binary).string();
  req.debug_file = o.debug_file;
  req.object = o.object;
  req.inlined = !o.no_inlined;
  req.set = sets[0];
  ResolverLimits limits;
  limits.timeout = std::chrono::seconds(o.timeout_s);
  const ResolveOutcome r = must(run_resolver(req, limits));
  std::fputs(r.log.c_str(), stderr);
  if (auto st = save_profile(o.out, r.profile); !st.ok()) {
    fail(st.error().message);
  }
  std::fprintf(stderr, "%s: %s profile in %.3f s, resolver peak RSS %ju MiB -> %s (%ju bytes)\n",
               o.binary.c_str(), r.profile.source.c_str(), r.seconds,
               static_cast<uintmax_t>(r.peak_rss_kib / 1024), o.out.c_str(),
               static_cast<uintmax_t>(fs::file_size(o.out)));
}

void show_probes(const Options& o) {
  if (o.markdown) {
    const bool store = o.probe_set == osd::kStoreSet;
    std::fputs((store ? osd::store_table_markdown() : osd::probe_table_markdown()).c_str(), stdout);
    return;
  }
  if (o.digests) {
    for (const ProbeSet& s : builtin_probe_sets()) {
      std::printf("%s %s\n", s.name.c_str(), probe_set_digest(s).c_str());
    }
    return;
  }
  for (const ProbeSet& s : builtin_probe_sets()) {
    std::fputs(probe_set_to_json(s).c_str(), stdout);
  }
}

void show_file(const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Profile p = must(load_profile(o.file));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.json) {
    std::fputs(dump_profile(p).c_str(), stdout);
    return;
  }
  std::printf("file        %s (valid, loaded in %.1f ms)\n", o.file.c_str(), s * 1e3);
  print_summary(p, stdout);
}

// Where the rados collector puts each stage in this library: a function of its profile, or
// one of Ceph's Objecter markers where the build carries them (they need no debug info).
void print_rados_stages(ProfileStore& store, const ModuleIdentity& id, const std::string& module,
                        const Result<LoadedProfile>& functions) {
  auto plan = functions.ok()
                  ? rados::plan_for(functions->profile, "")
                  : rados::unavailable_plan("", {Reason::kProfileUnavailable,
                                                 "no probe profile: " + functions.error().message});
  const auto markers = store.for_module(id, markers_probe_set(module));
  std::string used = markers.ok() ? rados::use_markers(plan, markers->profile.markers)
                                  : "markers not read: " + markers.error().message;
  std::printf("stages      %s\n%s",
              used.empty() ? "no Objecter markers in this build" : used.c_str(),
              rados::plan_summary(plan).c_str());
}

void show_pid(const Options& o) {
  StoreOptions so;
  so.cache_dir = o.cache_dir;
  so.shipped_dirs = o.shipped_dirs;
  so.resolve = !o.no_resolve;
  so.write_cache = !o.no_cache_write;
  ProfileStore store(so);
  const auto t_shipped = std::chrono::steady_clock::now();
  store.load_shipped();
  const double shipped_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_shipped).count();
  for (const RejectedProfile& r : store.rejected()) {
    std::printf("shipped profile rejected: %s\n", r.error.message.c_str());
  }
  std::printf("shipped     %zu profiles from %zu directories in %.1f ms\n", store.shipped_count(),
              so.shipped_dirs.size(), shipped_s * 1e3);

  // Which modules: the one asked for, or the executable and every library a probe set names.
  std::vector<std::pair<std::string, ProbeSet>> work;
  if (!o.module.empty() || !o.probe_set.empty()) {
    for (ProbeSet& s : probe_sets_for(o, o.module)) {
      std::string module = o.module;
      if (module.empty()) {
        module = s.objects.front();
      }
      work.emplace_back(module, std::move(s));
    }
  } else {
    for (ProbeSet& s : builtin_probe_sets()) {
      for (const std::string& obj : s.objects) {
        work.emplace_back(obj, s);
      }
    }
  }
  bool any = false;
  for (const auto& [module, set] : work) {
    const auto t0 = std::chrono::steady_clock::now();
    // The executable is asked for by its name: match it through /proc/PID/exe first.
    auto id = identify_module(o.pid, "");
    if (!id.ok() || !module_name_matches(id->name, module)) {
      id = identify_module(o.pid, module);
    }
    if (!id.ok()) {
      if (id.error().reason != to_string(Refusal::kNotMapped) || !o.module.empty()) {
        std::printf("%s: refused (%s): %s\n", module.c_str(), id.error().reason.c_str(),
                    id.error().message.c_str());
      }
      continue;
    }
    any = true;
    auto loaded = store.for_module(*id, set);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("\nprocess     %d: %s (%s, inode %" PRIu64 ")\n", o.pid, id->path.c_str(),
                id->host_path.c_str(), id->inode);
    if (set.name == rados::probe_set().name && !o.json) {
      print_rados_stages(store, *id, module, loaded);
    }
    if (!loaded.ok()) {
      std::printf("no profile: %s\n", loaded.error().message.c_str());
      continue;
    }
    std::printf("origin      %s: %s", std::string(to_string(loaded->origin)).c_str(),
                loaded->location.c_str());
    if (!loaded->debug_source.empty()) {
      std::printf(" (debuginfo: %s)", loaded->debug_source.c_str());
    }
    std::printf("\nlookup      %.1f ms (identify + %s)\n", s * 1e3,
                loaded->origin == Origin::kResolved ? "resolve" : "load");
    if (o.json) {
      std::fputs(dump_profile(loaded->profile).c_str(), stdout);
    } else {
      print_summary(loaded->profile, stdout);
    }
  }
  if (!any) {
    fail("no module of process " + std::to_string(o.pid) + " matches a probe set");
  }
}

}  // namespace

CLI::App* add_profile_commands(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* profile = app.add_subcommand("profile", "Probe profiles: generate and inspect");
  profile->require_subcommand(1);

  CLI::App* gen = profile->add_subcommand("generate", "Resolve a probe set against a binary");
  gen->add_option("--binary", o->binary, "The binary uprobes attach to")->required();
  gen->add_option("--debug-file", o->debug_file, "Its DWARF (default: searched)");
  gen->add_option("--probe-set", o->probe_set,
                  "A built-in set (osd-stages, bluestore-io, librados) or a spec file (default: by "
                  "binary name)");
  gen->add_option("--timeout", o->timeout_s, "Seconds the resolver may take")
      ->capture_default_str();
  gen->add_option("--object", o->object, "Object name to record (default: file name)");
  gen->add_flag("--no-inlined", o->no_inlined, "Do not list inlined instances");
  gen->add_option("--out", o->out, "Profile file to write")->required();
  gen->callback([o] { generate(*o); });

  CLI::App* show = profile->add_subcommand("show", "Show a profile file, or a process's");
  show->add_option("file", o->file, "Profile file");
  auto* pid = show->add_option("--pid", o->pid, "Process: what the daemon would use for it");
  show->add_option("--module", o->module, "Module of the process (default: all that match)")
      ->needs(pid);
  show->add_option("--probe-set", o->probe_set,
                   "A built-in set or a spec file (default: all that apply)");
  show->add_option("--cache-dir", o->cache_dir, "Profile cache")->needs(pid);
  show->add_option("--shipped-dir", o->shipped_dirs, "Shipped profiles (repeatable)")->needs(pid);
  show->add_flag("--no-resolve", o->no_resolve, "Use stored profiles only")->needs(pid);
  show->add_flag("--no-cache-write", o->no_cache_write, "Do not cache what is resolved")
      ->needs(pid);
  show->add_flag("--json", o->json, "Print the profile as JSON");
  show->callback([o] {
    if (o->pid > 0 && o->file.empty()) {
      show_pid(*o);
    } else if (o->pid == 0 && !o->file.empty()) {
      show_file(*o);
    } else {
      fail("show takes a FILE or --pid PID");
    }
  });

  CLI::App* probes = profile->add_subcommand("probes", "The built-in probe tables");
  probes->add_flag("--markdown", o->markdown,
                   "The OSD table as docs/collectors/osd.md shows it (--probe-set bluestore-io: "
                   "the bluestore layer's)");
  probes->add_option("--probe-set", o->probe_set, "With --markdown: osd-stages or bluestore-io");
  probes->add_flag("--digests", o->digests,
                   "One line per set: its name and the digest profiles made for it carry");
  probes->callback([o] { show_probes(*o); });
  return profile;
}

}  // namespace cephscope::profile
