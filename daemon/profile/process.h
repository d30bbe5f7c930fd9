// Identifying the binaries a process runs, from the host, across mount namespaces:
// /proc/PID/maps says which file (device, inode, path as the process sees it) is mapped;
// /proc/PID/map_files opens exactly that file, /proc/PID/root reaches the path a uprobe will
// attach to. If the two differ (the package was upgraded, the file deleted since the process
// started), offsets from one would land in the other: the module is refused, with a reason
// (Error::reason, a word of Refusal) the daemon exports as a self-metric label.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cephscope::profile {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  bool executable = false;
  std::string path;  // as the process sees it, " (deleted)" removed
  bool deleted = false;
};

// Parses a maps file's text (exposed for tests).
std::vector<Mapping> parse_maps(std::string_view text);
Result<std::vector<Mapping>> read_maps(pid_t pid, const std::string& proc = "/proc");

// Why identify_module() refuses a module.
enum class Refusal {
  kNoProcess,  // the process is gone
  kNoAccess,   // /proc/PID/... not readable (capabilities)
  kNotMapped,  // no such module in the process
  kDeleted,    // the mapped file was deleted (or is no longer reachable by its path)
  kReplaced,   // the path now names another file than the one mapped
  kNotElf,     // unreadable as ELF
  kNoBuildId,  // no build-id note: profiles cannot be keyed
};

// The stable word carried as Error::reason and exported as a metric label: "no_process",
// "no_access", "not_mapped", "deleted", "replaced", "not_elf", "no_build_id".
std::string_view to_string(Refusal r);

struct ModuleIdentity {
  pid_t pid = 0;
  std::string name;       // file name of the mapped file: "librados.so.2.0.0"
  std::string path;       // inside the process's mount namespace: "/usr/lib/..."
  std::string host_path;  // the same file from the host: "/proc/PID/root/usr/lib/..."
  std::string root;       // "/proc/PID/root"
  std::string build_id;
  uint64_t dev = 0;  // makedev(major, minor) from maps
  uint64_t inode = 0;
  bool main_executable = false;
};

// The module NAME of PID: "" for the main executable, else a file name matched as a soname
// ("librados.so.2" matches "librados.so.2.0.0"). A refusal is an error whose reason is
// to_string(Refusal) and whose message says what was seen, for logs.
Result<ModuleIdentity> identify_module(pid_t pid, std::string_view name,
                                       const std::string& proc = "/proc");

// True when FILE_NAME is NAME or NAME followed by a version suffix (".0.0").
bool module_name_matches(std::string_view file_name, std::string_view name);

}  // namespace cephscope::profile
