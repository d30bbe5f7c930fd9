// The resolver as a child process. Parsing ELF and DWARF that a container or debuginfod
// supplies is the riskiest work cephscope does, so the daemon never does it: it runs
// cephscope-resolver with no capabilities, an address-space limit, a wall-clock timeout, a
// parent-death signal and only the descriptors it needs, and reads back one profile through
// the same validating loader as a shipped file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>

#include "core/result.h"
#include "profile/probe_set.h"
#include "profile/profile.h"

namespace cephscope::profile {

struct ResolverLimits {
  std::string executable;  // "" = resolver_executable()
  std::chrono::milliseconds timeout{300'000};
  std::uint64_t address_space_bytes = 4ULL << 30;
  std::size_t max_output_bytes = 64 << 20;  // the profile loader's own limit
};

struct ResolveRequest {
  std::string binary;           // path the resolver opens (inside target_root when that is set)
  std::string target_root;      // "/proc/PID/root" of a target in another mount namespace, or ""
  std::string debug_file;       // explicit DWARF file; "" = searched
  std::string host_root = "/";  // where the host's debug files are searched
  std::string debug_dir = "/usr/lib/debug";  // the debug directory in each root
  bool debuginfod = true;                    // ask DEBUGINFOD_URLS when it is set
  std::string object;                        // recorded in the profile; "" = the binary's file name
  bool inlined = true;                       // list inlined instances
  ProbeSet set;
};

struct ResolveOutcome {
  Profile profile;
  std::string debug_source;  // "build-id-host", "debuglink", ... ; "" without DWARF
  std::string log;           // what the resolver printed on stderr (bounded)
  double seconds = 0;
  std::uint64_t peak_rss_kib = 0;  // the child's, from wait4()
};

// Runs the resolver and waits for it, at most LIMITS.timeout, or until STOP is requested.
// The outcome's profile has passed parse_profile(); errors name the cause: "resolver timed
// out after 300 s", "resolver killed by signal 9", "resolver failed: <its message>".
Result<ResolveOutcome> run_resolver(const ResolveRequest& request, const ResolverLimits& limits,
                                    const std::stop_token& stop = {});

// cephscope-resolver beside the running executable, else the installed one.
std::string resolver_executable();

}  // namespace cephscope::profile
