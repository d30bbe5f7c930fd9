// ProfileStore: the profile the daemon uses for a module, from (in order) the on-disk cache,
// the shipped profiles read at start, or a fresh resolve (DWARF if it can be found, else the
// symbol table), which is then cached. Profiles are keyed by build-id and probe set, so
// several Ceph builds on one host (containers of different versions) each get their own.
// Not thread-safe: one store per thread, or a lock around it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "profile/debuginfo.h"
#include "profile/probe_set.h"
#include "profile/process.h"
#include "profile/profile.h"
#include "profile/resolver.h"

namespace cephscope::profile {

enum class Origin { kMemory, kCache, kShipped, kResolved };
std::string_view to_string(Origin o);  // "memory", "cache", "shipped", "resolved"

struct StoreOptions {
  std::string cache_dir = "/var/lib/cephscope/profiles";
  std::vector<std::string> shipped_dirs = {"/usr/share/cephscope/profiles"};
  bool write_cache = true;
  bool resolve = true;  // resolve when no stored profile fits (else kNotFound)
  DebugSearch debug;    // target_root is set per process
  ResolveOptions resolve_options;
};

struct LoadedProfile {
  Profile profile;
  Origin origin = Origin::kResolved;
  std::string location;  // the profile file, or for kResolved the file resolved from
  std::optional<DebugSource> debug_source;  // kResolved from DWARF
  double seconds = 0;
};

struct RejectedProfile {
  std::string path;
  Error error;
};

class ProfileStore {
 public:
  explicit ProfileStore(StoreOptions options);

  // Reads every *.json of the shipped directories. Bad files are kept in rejected() with the
  // reason and never used; a missing directory is not an error.
  void load_shipped();
  [[nodiscard]] const std::vector<RejectedProfile>& rejected() const { return rejected_; }
  [[nodiscard]] size_t shipped_count() const { return shipped_.size(); }

  // For a module found by identify_module().
  Result<LoadedProfile> for_module(const ModuleIdentity& module, const ProbeSet& set);
  // For a binary given by path (on the host).
  Result<LoadedProfile> for_binary(const std::string& path, const ProbeSet& set);

  [[nodiscard]] std::string cache_path(const std::string& build_id,
                                       const std::string& probe_set) const;

 private:
  using Key = std::pair<std::string, std::string>;  // build-id, probe-set name

  Result<LoadedProfile> lookup(const std::string& build_id, const std::string& binary_path,
                               const std::string& path_in_root, const std::string& target_root,
                               const ProbeSet& set);
  Result<LoadedProfile> resolve(const std::string& binary_path, const std::string& path_in_root,
                                const std::string& target_root, const ProbeSet& set);

  StoreOptions options_;
  std::map<Key, std::pair<Profile, std::string>> shipped_;  // profile, file
  std::map<Key, LoadedProfile> memory_;
  std::vector<RejectedProfile> rejected_;
};

}  // namespace cephscope::profile
