// Finding a binary's DWARF: the binary itself, /usr/lib/debug/.build-id/xx/rest.debug under
// the host root and under the target's root (a container ships its own -dbg packages),
// .gnu_debuglink next to the binary, and debuginfod when DEBUGINFOD_URLS is set (if built
// with libdebuginfod). Every candidate must carry .debug_info and the binary's build-id.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "profile/elf_file.h"

namespace cephscope::profile {

enum class DebugSource {
  kExplicit,     // given by the user
  kEmbedded,     // the binary is not stripped
  kBuildIdHost,  // /usr/lib/debug/.build-id on the host
  kBuildIdRoot,  // the same under the target's root
  kDebuglink,    // .gnu_debuglink
  kDebuginfod,
};

std::string_view to_string(DebugSource s);

struct DebugFileRef {
  std::string path;
  DebugSource source = DebugSource::kExplicit;
  std::string in_root;  // its path inside the target's root (open it there); "" on the host
};

struct DebugSearch {
  std::string explicit_file;    // --debug-file: the only candidate when set
  std::string target_root;      // "/proc/PID/root"; empty for a host binary
  int target_root_fd = -1;      // target_root opened O_PATH: candidates there open inside it
  std::string host_root = "/";  // tests point this at a fixture tree
  std::string debug_dir = "/usr/lib/debug";
  bool debuginfod = true;  // used only if DEBUGINFOD_URLS is set
};

// BINARY_PATH is the binary's path inside its root (for .gnu_debuglink directories).
Result<DebugFileRef> find_debuginfo(const ElfFile& binary, const std::string& build_id,
                                    const std::string& binary_path, const DebugSearch& search);

// True when this build can query debuginfod servers.
bool have_debuginfod();

}  // namespace cephscope::profile
