#include "profile/store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "core/reason.h"
#include "profile/elf_file.h"
#include "profile/profile_json.h"

namespace cephscope::profile {

namespace {

namespace fs = std::filesystem;

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool fits(const Profile& p, const ProbeSet& set) {
  return p.probe_set == set.name && p.probe_set_digest == set.digest;
}

// The *.json files of DIR, sorted; none when DIR does not exist.
Result<std::vector<std::string>> json_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".json") {
      files.push_back(it->path().string());
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return make_error(ErrorKind::kSystem, dir + ": " + ec.message(), ec.value());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string_view to_string(Origin o) {
  switch (o) {
    case Origin::kMemory:
      return "memory";
    case Origin::kCache:
      return "cache";
    case Origin::kShipped:
      return "shipped";
    case Origin::kResolved:
      return "resolved";
  }
  return "resolved";
}

ProfileStore::ProfileStore(StoreOptions options) : options_(std::move(options)) {}

std::string ProfileStore::cache_path(const std::string& build_id, const std::string& probe_set,
                                     bool from_target_files) const {
  const fs::path dir = from_target_files ? fs::path(options_.cache_dir) / "containers"
                                         : fs::path(options_.cache_dir);
  return (dir / (build_id + "." + probe_set + ".json")).string();
}

void ProfileStore::load_shipped() {
  for (const std::string& dir : options_.shipped_dirs) {
    auto files = json_files_in(dir);
    if (!files.ok()) {
      spdlog::warn("shipped profiles not read: {}", files.error().message);
      continue;
    }
    for (const std::string& f : *files) {
      auto p = load_profile(f);
      if (!p.ok()) {
        spdlog::warn("shipped profile rejected: {}", p.error().message);
        rejected_.push_back({f, p.error()});
        continue;
      }
      // The first directory listed wins: the installed profiles before a build tree's.
      ShippedKey key{p->build_id, p->probe_set};
      shipped_.try_emplace(key, std::move(p).value(), f);
    }
  }
}

Result<LoadedProfile> ProfileStore::for_module(const ModuleIdentity& module, const ProbeSet& set,
                                               const std::stop_token& stop) {
  return lookup(module.build_id, module.path, module.root, set, stop);
}

Result<LoadedProfile> ProfileStore::for_binary(const std::string& path, const ProbeSet& set,
                                               const std::stop_token& stop) {
  auto elf = ElfFile::open(path);
  if (!elf.ok()) {
    return elf.error();
  }
  auto id = elf->build_id();
  if (!id.ok()) {
    return id.error();
  }
  return lookup(*id, path, "", set, stop);
}

Result<LoadedProfile> ProfileStore::lookup(const std::string& build_id, const std::string& binary,
                                           const std::string& target_root, const ProbeSet& set,
                                           const std::stop_token& stop) {
  const auto t0 = std::chrono::steady_clock::now();
  auto remember = [&](LoadedProfile lp) {
    lp.seconds = since(t0);
    memory_.insert_or_assign(Key{build_id, set.name, lp.from_target_files}, lp);
    return lp;
  };
  auto from_memory = [&](bool from_target_files) -> std::optional<LoadedProfile> {
    auto m = memory_.find(Key{build_id, set.name, from_target_files});
    if (m == memory_.end() || !fits(m->second.profile, set)) {
      return std::nullopt;
    }
    LoadedProfile out = m->second;
    out.origin = Origin::kMemory;
    out.seconds = since(t0);
    return out;
  };
  // A symbol-table-only profile is resolved again, once per daemon run, in case DWARF can be
  // found now (a -dbg package installed since); the resolver gives the same one if not.
  auto usable = [&](const Profile& p) {
    return fits(p, set) && (p.source != "symtab" || !options_.resolve);
  };
  auto from_cache = [&](bool from_target_files) -> std::optional<LoadedProfile> {
    const std::string cached = cache_path(build_id, set.name, from_target_files);
    auto p = load_profile(cached, build_id);
    if (!p.ok()) {
      if (p.error().kind != ErrorKind::kNotFound) {
        spdlog::warn("cached profile ignored: {}", p.error().message);
      }
      return std::nullopt;
    }
    if (!usable(*p)) {
      return std::nullopt;
    }
    return remember(
        LoadedProfile{std::move(p).value(), Origin::kCache, cached, "", 0, 0, from_target_files});
  };

  // The host's word first: memory, cache, shipped.
  if (auto m = from_memory(false)) {
    return *m;
  }
  if (auto c = from_cache(false)) {
    return *c;
  }
  if (auto s = shipped_.find({build_id, set.name});
      s != shipped_.end() && usable(s->second.first)) {
    return remember(LoadedProfile{s->second.first, Origin::kShipped, s->second.second, "", 0, 0});
  }
  // Then, for a module in a container only, what its files said before.
  const bool in_container = !target_root.empty();
  if (in_container) {
    if (auto m = from_memory(true)) {
      return *m;
    }
    if (auto c = from_cache(true)) {
      return *c;
    }
  }
  if (!options_.resolve) {
    return make_error(ErrorKind::kNotFound,
                      "no stored profile for build-id " + build_id + " and probe set " + set.name);
  }
  auto fresh = resolve(binary, target_root, set, stop);
  if (!fresh.ok()) {
    return fresh.error();
  }
  if (fresh->profile.build_id != build_id) {
    return make_error(ErrorKind::kInvalidInput,
                      "build-id mismatch: " + binary + " changed while being resolved");
  }
  if (!fits(fresh->profile, set)) {
    return make_error(ErrorKind::kInvalidInput, "the resolver answered for another probe set");
  }
  if (options_.write_cache) {
    const std::string cached = cache_path(build_id, set.name, fresh->from_target_files);
    std::error_code ec;
    fs::create_directories(fs::path(cached).parent_path(), ec);
    if (auto st = save_profile(cached, fresh->profile); !st.ok()) {
      spdlog::warn("profile not cached: {}", st.error().message);
    }
  }
  return remember(std::move(fresh).value());
}

Result<LoadedProfile> ProfileStore::resolve(const std::string& binary,
                                            const std::string& target_root, const ProbeSet& set,
                                            const std::stop_token& stop) {
  ResolveRequest req;
  req.binary = binary;
  req.target_root = target_root;
  req.host_root = options_.host_root;
  req.debug_dir = options_.debug_dir;
  req.debuginfod = options_.debuginfod;
  req.set = set;
  auto out = run_resolver(req, options_.limits, stop);
  if (!out.ok()) {
    Error e = out.error();
    e.reason = std::string(to_string(Reason::kResolverFailed));
    return e;
  }
  spdlog::info("profile of {}{} resolved in {:.1f} s (resolver peak RSS {} MiB)", target_root,
               binary, out->seconds, out->peak_rss_kib / 1024);
  const std::string debug_file = out->profile.debug_file;
  // Only debug files from the host's own directories or debuginfod are the host's word; the
  // binary's own DWARF or symbols, a debuglink or build-id file in its root are the target's.
  // (the resolver's words for them: resolver/debuginfo.cpp)
  const std::string& source = out->debug_source;
  const bool host_debug =
      source == "build-id (host)" || source == "debuginfod" || source == "explicit";
  return LoadedProfile{std::move(out->profile),
                       Origin::kResolved,
                       debug_file.empty() ? target_root + binary : debug_file,
                       out->debug_source,
                       out->seconds,
                       out->peak_rss_kib,
                       !target_root.empty() && !host_debug};
}

}  // namespace cephscope::profile
