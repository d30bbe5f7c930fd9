#include "profile/store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "profile/dwarf_file.h"
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

std::string ProfileStore::cache_path(const std::string& build_id,
                                     const std::string& probe_set) const {
  return (fs::path(options_.cache_dir) / (build_id + "." + probe_set + ".json")).string();
}

void ProfileStore::load_shipped() {
  for (const std::string& dir : options_.shipped_dirs) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".json") {
        files.push_back(e.path().string());
      }
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      auto p = load_profile(f);
      if (!p.ok()) {
        spdlog::warn("shipped profile rejected: {}", p.error().message);
        rejected_.push_back({f, p.error()});
        continue;
      }
      Key key{p->build_id, p->probe_set};
      shipped_.insert_or_assign(key, std::make_pair(std::move(p).value(), f));
    }
  }
}

Result<LoadedProfile> ProfileStore::for_module(const ModuleIdentity& module, const ProbeSet& set) {
  return lookup(module.build_id, module.host_path, module.path, module.root, set);
}

Result<LoadedProfile> ProfileStore::for_binary(const std::string& path, const ProbeSet& set) {
  auto elf = ElfFile::open(path);
  if (!elf.ok()) {
    return elf.error();
  }
  auto id = elf->build_id();
  if (!id.ok()) {
    return id.error();
  }
  return lookup(*id, path, path, "", set);
}

Result<LoadedProfile> ProfileStore::lookup(const std::string& build_id,
                                           const std::string& binary_path,
                                           const std::string& path_in_root,
                                           const std::string& target_root, const ProbeSet& set) {
  const auto t0 = std::chrono::steady_clock::now();
  const Key key{build_id, set.name};
  if (auto m = memory_.find(key); m != memory_.end() && fits(m->second.profile, set)) {
    LoadedProfile out = m->second;
    out.origin = Origin::kMemory;
    out.seconds = since(t0);
    return out;
  }
  auto remember = [&](LoadedProfile lp) {
    lp.seconds = since(t0);
    memory_.insert_or_assign(key, lp);
    return lp;
  };
  // A symbol-table-only profile is replaced as soon as DWARF can be found.
  auto upgradable = [&](const Profile& p) {
    if (p.source != "symtab" || !options_.resolve) {
      return false;
    }
    auto elf = ElfFile::open(binary_path);
    if (!elf.ok()) {
      return false;
    }
    DebugSearch search = options_.debug;
    search.target_root = target_root;
    return find_debuginfo(*elf, build_id, path_in_root, search).ok();
  };

  const std::string cached = cache_path(build_id, set.name);
  std::error_code ec;
  if (fs::exists(cached, ec)) {
    auto p = load_profile(cached, build_id);
    if (!p.ok()) {
      spdlog::warn("cached profile ignored: {}", p.error().message);
    } else if (fits(*p, set) && !upgradable(*p)) {
      return remember(LoadedProfile{std::move(p).value(), Origin::kCache, cached, {}, 0});
    }
  }
  if (auto s = shipped_.find(key);
      s != shipped_.end() && fits(s->second.first, set) && !upgradable(s->second.first)) {
    return remember(LoadedProfile{s->second.first, Origin::kShipped, s->second.second, {}, 0});
  }
  if (!options_.resolve) {
    return make_error(ErrorKind::kNotFound,
                      "no stored profile for build-id " + build_id + " and probe set " + set.name);
  }
  auto fresh = resolve(binary_path, path_in_root, target_root, set);
  if (!fresh.ok()) {
    return fresh.error();
  }
  if (fresh->profile.build_id != build_id) {
    return make_error(ErrorKind::kInvalidInput,
                      "build-id mismatch: " + binary_path + " changed while being resolved");
  }
  if (options_.write_cache) {
    if (auto st = save_profile(cached, fresh->profile); !st.ok()) {
      spdlog::warn("profile not cached: {}", st.error().message);
    }
  }
  return remember(std::move(fresh).value());
}

Result<LoadedProfile> ProfileStore::resolve(const std::string& binary_path,
                                            const std::string& path_in_root,
                                            const std::string& target_root, const ProbeSet& set) {
  const auto t0 = std::chrono::steady_clock::now();
  auto binary = ElfFile::open(binary_path);
  if (!binary.ok()) {
    return binary.error();
  }
  auto build_id = binary->build_id();
  if (!build_id.ok()) {
    return build_id.error();
  }
  DebugSearch search = options_.debug;
  search.target_root = target_root;
  auto debug_ref = find_debuginfo(*binary, *build_id, path_in_root, search);
  std::optional<DwarfFile> dwarf;
  if (debug_ref.ok()) {
    auto d = DwarfFile::open(debug_ref->path);
    if (d.ok()) {
      dwarf.emplace(std::move(d).value());
    } else if (!search.explicit_file.empty()) {
      return d.error();
    } else {
      // Unreadable debuginfo (corrupt, or from a container): function offsets still work.
      spdlog::warn("{}: {}; offsets from the symbol table only", binary_path, d.error().message);
      debug_ref = d.error();
    }
  } else if (!search.explicit_file.empty()) {
    return debug_ref.error();
  } else {
    spdlog::info("{}: {}; offsets from the symbol table only", binary_path,
                 debug_ref.error().message);
  }
  ResolveOptions ro = options_.resolve_options;
  if (ro.object.empty()) {
    ro.object = fs::path(path_in_root).filename().string();
  }
  auto p = resolve_profile(*binary, dwarf ? &*dwarf : nullptr, set, ro);
  if (!p.ok()) {
    return p.error();
  }
  LoadedProfile out{std::move(p).value(), Origin::kResolved,
                    debug_ref.ok() ? debug_ref->path : binary_path, std::nullopt, since(t0)};
  if (debug_ref.ok()) {
    out.debug_source = debug_ref->source;
  }
  return out;
}

}  // namespace cephscope::profile
