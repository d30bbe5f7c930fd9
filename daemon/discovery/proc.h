// Reads what discovery needs from /proc. Every field is untrusted input: a process can set
// its own comm and argv, and can exit between two reads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/safe_file.h"

namespace cephscope {

struct ProcessInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  char state = '?';
  std::uint64_t start_time = 0;  // clock ticks after boot: tells a reused pid apart
  bool kernel_thread = false;
  std::vector<std::string> argv;
  std::string exe;  // path in the process's mount namespace; " (deleted)" removed
  bool exe_deleted = false;
  bool exe_denied = false;  // /proc/PID/exe unreadable: another user's process, no CAP_SYS_PTRACE
  std::string root;         // /proc/PID/root: where the process's files are reachable from here
};

class ProcReader {
 public:
  explicit ProcReader(std::string proc_root = "/proc") : root_(std::move(proc_root)) {}

  // Every process under the proc root; an error when the root cannot be listed, which must
  // not pass for "no process left".
  [[nodiscard]] Result<std::vector<pid_t>> list_pids() const;
  // kNotFound when the process is gone (or vanished while being read).
  [[nodiscard]] Result<ProcessInfo> read(pid_t pid) const;
  // The content of /proc/PID/cgroup (at most 64 KiB), "" when the process is gone.
  [[nodiscard]] std::string cgroup(pid_t pid) const;
  // Whether the process maps a file whose name starts with one of `prefixes`.
  [[nodiscard]] bool maps_library(pid_t pid, const std::vector<std::string>& prefixes) const;
  // Reads a file as the process sees it, resolved inside its root (core/safe_file.h): a
  // regular file of at most max_bytes, else a refusal whose reason says why. The target
  // names these files: a FIFO, a device or a symlink out of its root is never opened.
  [[nodiscard]] Result<std::string> read_in_root(pid_t pid, const std::string& path,
                                                 std::size_t max_bytes) const;
  [[nodiscard]] const std::string& root() const { return root_; }

 private:
  std::string root_;
};

// Parses the content of /proc/PID/stat; false when malformed.
bool parse_stat(const std::string& text, ProcessInfo& out);
// Splits /proc/PID/cmdline (NUL-separated, the last NUL optional) into arguments.
std::vector<std::string> parse_cmdline(std::string_view text);
// Whether one line of /proc/PID/maps maps, executable, a file whose name starts with one of
// `prefixes`.
bool maps_line_has_library(std::string_view line, const std::vector<std::string>& prefixes);

}  // namespace cephscope
