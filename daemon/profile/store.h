// ProfileStore: the profile the daemon uses for a module, from (in order) memory, the on-disk
// cache, the shipped profiles read at start, or a fresh resolve by the resolver process
// (DWARF if it can be found, else the symbol table), which is then cached. Profiles are keyed
// by build-id and probe set, and used only when made for the set's digest, so several Ceph
// builds on one host each get their own and a changed probe table never uses a stale one.
//
// A profile made from files inside a target's container (its debug files, or its binary's
// own DWARF or symbols) is the container's word: it is kept apart (in memory, and in the
// cache's containers/ directory), is used only for modules in a container and only after
// every host, cached and shipped source failed, and says so (from_target_files), so that its
// offsets are checked against each binary it is applied to (profile/verify.h).
// Not thread-safe: one store per thread, or a lock around it.
#pragma once

#include <cstdint>
#include <map>
#include <stop_token>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/result.h"
#include "profile/probe_set.h"
#include "profile/process.h"
#include "profile/profile.h"
#include "profile/resolver_process.h"

namespace cephscope::profile {

enum class Origin { kMemory, kCache, kShipped, kResolved };
std::string_view to_string(Origin o);  // "memory", "cache", "shipped", "resolved"

struct StoreOptions {
  std::string cache_dir = "/var/lib/cephscope/profiles";
  std::vector<std::string> shipped_dirs = {"/usr/share/cephscope/profiles"};
  bool write_cache = true;
  bool resolve = true;  // resolve when no stored profile fits (else kNotFound)
  // Where the resolver looks for debug files (tests point these at fixture trees).
  std::string host_root = "/";
  std::string debug_dir = "/usr/lib/debug";
  bool debuginfod = true;  // used only if DEBUGINFOD_URLS is set
  ResolverLimits limits;
};

struct LoadedProfile {
  Profile profile;
  Origin origin = Origin::kResolved;
  std::string location;      // the profile file, or for kResolved the file resolved from
  std::string debug_source;  // kResolved from DWARF: "embedded", "debuglink", ...
  double seconds = 0;
  std::uint64_t resolver_peak_rss_kib = 0;  // kResolved: the resolver process's peak
  bool from_target_files = false;           // made from a container's files: verify before probing
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

  // For a module found by identify_module(). STOP ends a resolve in progress.
  Result<LoadedProfile> for_module(const ModuleIdentity& module, const ProbeSet& set,
                                   const std::stop_token& stop = {});
  // For a binary given by path (on the host).
  Result<LoadedProfile> for_binary(const std::string& path, const ProbeSet& set,
                                   const std::stop_token& stop = {});

  [[nodiscard]] std::string cache_path(const std::string& build_id, const std::string& probe_set,
                                       bool from_target_files = false) const;

 private:
  // build-id, probe-set name, made from a container's files
  using Key = std::tuple<std::string, std::string, bool>;
  using ShippedKey = std::pair<std::string, std::string>;

  // BINARY is the path inside TARGET_ROOT ("" for the host).
  Result<LoadedProfile> lookup(const std::string& build_id, const std::string& binary,
                               const std::string& target_root, const ProbeSet& set,
                               const std::stop_token& stop);
  Result<LoadedProfile> resolve(const std::string& binary, const std::string& target_root,
                                const ProbeSet& set, const std::stop_token& stop);

  StoreOptions options_;
  std::map<ShippedKey, std::pair<Profile, std::string>> shipped_;  // profile, file
  std::map<Key, LoadedProfile> memory_;
  std::vector<RejectedProfile> rejected_;
};

}  // namespace cephscope::profile
