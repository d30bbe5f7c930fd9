#include "discovery/proc.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/safe_file.h"
#include "core/unique_fd.h"

namespace cephscope {
namespace {

constexpr std::uint64_t kPfKthread = 0x00200000;
constexpr std::size_t kMaxCmdline = std::size_t{64} * 1024;
constexpr std::string_view kDeleted = " (deleted)";

// At most max_bytes of a file; kNotFound when it cannot be opened (the process is gone, or
// the file is not there).
Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(ErrorKind::kNotFound, path + ": cannot be opened");
  }
  std::string out(max_bytes, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max_bytes));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

}  // namespace

bool parse_stat(const std::string& text, ProcessInfo& out) {
  // "pid (comm) state ppid ..." where comm may hold spaces and parentheses.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open ||
      close + 2 >= text.size()) {
    return false;
  }
  out.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 2));
  std::vector<std::string> fields;
  std::string field;
  while (rest >> field && fields.size() < 20) {
    fields.push_back(field);
  }
  // After comm: state(0) ppid(1) pgrp(2) session(3) tty(4) tpgid(5) flags(6) ... starttime(19).
  if (fields.size() < 20 || fields[0].size() != 1) {
    return false;
  }
  out.state = fields[0][0];
  if (std::from_chars(fields[1].data(), fields[1].data() + fields[1].size(), out.ppid).ec !=
      std::errc{}) {
    return false;
  }
  std::uint64_t flags = 0;
  const auto& f = fields[6];
  if (std::from_chars(f.data(), f.data() + f.size(), flags).ec != std::errc{}) {
    return false;
  }
  out.kernel_thread = (flags & kPfKthread) != 0;
  const auto& st = fields[19];
  return std::from_chars(st.data(), st.data() + st.size(), out.start_time).ec == std::errc{};
}

std::vector<std::string> parse_cmdline(std::string_view text) {
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\0', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    argv.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

bool maps_line_has_library(std::string_view line, const std::vector<std::string>& prefixes) {
  // Only code the process runs: a file read through mmap (a debugger, the resolver) is data.
  const auto perms = line.find(' ');
  if (perms == std::string_view::npos || perms + 3 >= line.size() || line[perms + 3] != 'x') {
    return false;
  }
  const auto slash = line.rfind('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  // Up to a NUL, as the C string it was read as.
  std::string_view base = line.substr(slash + 1);
  base = base.substr(0, base.find('\0'));
  for (const auto& p : prefixes) {
    if (base.starts_with(p)) {
      return true;
    }
  }
  return false;
}

Result<std::vector<pid_t>> ProcReader::list_pids() const {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    pid_t pid = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), pid).ec == std::errc{} && pid > 0) {
      pids.push_back(pid);
    }
  }
  if (ec) {
    return make_error(ErrorKind::kSystem, "cannot list " + root_ + ": " + ec.message(), ec.value());
  }
  return pids;
}

Result<ProcessInfo> ProcReader::read(pid_t pid) const {
  const std::string dir = root_ + "/" + std::to_string(pid);
  ProcessInfo info;
  info.pid = pid;
  auto stat = read_file(dir + "/stat", 4096);
  if (!stat.ok() || stat->empty()) {
    return make_error(ErrorKind::kNotFound, "process " + std::to_string(pid) + " is gone");
  }
  if (!parse_stat(*stat, info)) {
    return make_error(ErrorKind::kInvalidInput, dir + "/stat: malformed");
  }
  info.root = dir + "/root";
  if (info.kernel_thread || info.state == 'Z') {
    return info;  // no exe, no argv: never a target
  }
  auto read_cmdline = read_file(dir + "/cmdline", kMaxCmdline);
  if (!read_cmdline.ok()) {
    return make_error(ErrorKind::kNotFound, "process " + std::to_string(pid) + " is gone");
  }
  info.argv = parse_cmdline(*read_cmdline);
  std::error_code ec;
  auto exe = std::filesystem::read_symlink(dir + "/exe", ec).string();
  if (!ec) {
    if (exe.size() > kDeleted.size() && exe.ends_with(kDeleted)) {
      exe.resize(exe.size() - kDeleted.size());
      info.exe_deleted = true;
    }
    info.exe = exe;
  } else if (ec == std::errc::permission_denied) {
    info.exe_denied = true;
  }
  return info;
}

std::string ProcReader::cgroup(pid_t pid) const {
  constexpr std::size_t kMaxCgroup = std::size_t{64} * 1024;
  auto text = read_file(root_ + "/" + std::to_string(pid) + "/cgroup", kMaxCgroup);
  return text.ok() ? *text : "";
}

bool ProcReader::maps_library(pid_t pid, const std::vector<std::string>& prefixes) const {
  std::ifstream maps(root_ + "/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (maps_line_has_library(line, prefixes)) {
      return true;
    }
  }
  return false;
}

Result<std::string> ProcReader::read_in_root(pid_t pid, const std::string& path,
                                             std::size_t max_bytes) const {
  const std::string root = root_ + "/" + std::to_string(pid) + "/root";
  // O_PATH on the root touches no file system; everything below it is resolved inside it.
  const UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd.valid()) {
    const int err = errno;
    Error e = make_error(ErrorKind::kNotFound,
                         "root of process " + std::to_string(pid) + ": " + std::strerror(err), err);
    e.reason = err == EACCES || err == EPERM ? "no_access" : "not_found";
    return e;
  }
  return cephscope::read_in_root(root_fd.get(), path, max_bytes);
}

}  // namespace cephscope
