// Opening files that a target names: its -c/--conf, anything under its root, its debug files.
// The target chooses what is there, so a name may be a FIFO (open() would block), a socket, a
// device, a symlink out of its root, or a sparse file of any size. These helpers never open
// anything but a regular file, and never block on anything but the file system:
//
//   1. the path is reached with O_PATH (which opens nothing: a FIFO has no reader waiting, a
//      device's driver is not called), inside the given root (openat2 RESOLVE_IN_ROOT: every
//      "..", absolute path and symlink is resolved as if the root were "/", magic links such
//      as /proc/self/root are refused);
//   2. fstat: a regular file of at most max_size bytes, else refused;
//   3. only then opened for reading, through /proc/self/fd/N: the very inode checked, not
//      whatever the path names by now.
//
// On kernels without openat2 (before 5.6) the path is walked one component at a time with
// O_NOFOLLOW, and any symlink on the way is refused ("symlink").
//
// Refusals are errors whose `reason` is one word: bad_path, not_found, no_access, symlink,
// not_regular, too_large, changed, io_error.
#pragma once

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/unique_fd.h"

namespace cephscope {

enum class RootWalk {
  kAuto,  // openat2 RESOLVE_IN_ROOT, else the component walk
  kWalk,  // always the component walk (tests; kernels whose openat2 is filtered)
};

struct SafeOpen {
  std::uint64_t max_size = std::uint64_t{1} << 20;
  RootWalk walk = RootWalk::kAuto;
};

namespace safe_file_detail {

inline Error refusal(std::string_view reason, const std::string& path, const std::string& what,
                     int code = 0) {
  ErrorKind kind = ErrorKind::kInvalidInput;
  if (reason == "not_found") {
    kind = ErrorKind::kNotFound;
  } else if (reason == "no_access" || reason == "io_error") {
    kind = ErrorKind::kSystem;
  }
  Error e = make_error(kind, path + ": " + what, code);
  e.reason = std::string(reason);
  return e;
}

inline Error from_errno(const std::string& path, int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return refusal("not_found", path, std::strerror(err), err);
    case EACCES:
    case EPERM:
      return refusal("no_access", path, std::strerror(err), err);
    case ELOOP:
      return refusal("symlink", path, "a symlink loop or a magic link", err);
    case EXDEV:
      return refusal("symlink", path, "resolves outside the root", err);
    default:
      return refusal("io_error", path, std::strerror(err), err);
  }
}

// "" when PATH is acceptable, else why not: relative, "..", NUL, too long.
inline std::string path_problem(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return "not an absolute path";
  }
  if (path.size() > 4096 || path.find('\0') != std::string::npos) {
    return "malformed path";
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    if (std::string_view(path).substr(start, end - start) == "..") {
      return "'..' in path";
    }
    start = end + 1;
  }
  return "";
}

inline int sys_openat2(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

// PATH (absolute, no "..") under ROOT_FD, one component at a time, refusing every symlink.
inline Result<UniqueFd> walk_o_path(int root_fd, const std::string& path) {
  UniqueFd cur(::openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) {
    return from_errno(path, errno);
  }
  std::size_t start = 1;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    const std::string part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") {
      continue;
    }
    UniqueFd next(::openat(cur.get(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) {
      return from_errno(path, errno);
    }
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) {
      return from_errno(path, errno);
    }
    if (S_ISLNK(st.st_mode)) {
      return refusal("symlink", path, "'" + part + "' is a symlink (refused without openat2)");
    }
    cur = std::move(next);
  }
  return cur;
}

// The file an O_PATH descriptor located, opened for reading: a regular file of at most
// max_size bytes (a FIFO, socket or device is refused without ever being opened), re-opened
// through /proc/self/fd, which opens the same inode.
inline Result<UniqueFd> open_located(UniqueFd located, const std::string& path,
                                     const SafeOpen& opts) {
  struct stat st {};
  if (::fstat(located.get(), &st) != 0) {
    return from_errno(path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                                              : "not a regular file";
    return refusal("not_regular", path, std::string(what) + ", not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > opts.max_size) {
    return refusal(
        "too_large", path,
        std::to_string(st.st_size) + " bytes, over the cap of " + std::to_string(opts.max_size));
  }
  const std::string self = "/proc/self/fd/" + std::to_string(located.get());
  UniqueFd fd(::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    return from_errno(path, errno);
  }
  struct stat again {};
  if (::fstat(fd.get(), &again) != 0) {
    return from_errno(path, errno);
  }
  if (again.st_ino != st.st_ino || again.st_dev != st.st_dev) {
    return refusal("changed", path, "changed while opened");
  }
  return fd;
}

}  // namespace safe_file_detail

// PATH as a process whose root directory is ROOT_FD sees it (ROOT_FD may be AT_FDCWD's "/" as
// an fd, or /proc/PID/root opened O_PATH), opened for reading: a regular file of at most
// opts.max_size bytes, or a refusal.
inline Result<UniqueFd> open_in_root(int root_fd, const std::string& path,
                                     const SafeOpen& opts = {}) {
  using namespace safe_file_detail;
  if (const std::string problem = path_problem(path); !problem.empty()) {
    return refusal("bad_path", path, problem);
  }
  UniqueFd located;
  bool need_walk = opts.walk == RootWalk::kWalk;
  if (!need_walk) {
    located.reset(sys_openat2(root_fd, path.c_str(), O_PATH | O_CLOEXEC,
                              RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS));
    if (!located.valid()) {
      if (errno != ENOSYS) {
        return from_errno(path, errno);
      }
      need_walk = true;
    }
  }
  if (need_walk) {
    auto walked = walk_o_path(root_fd, path);
    if (!walked.ok()) {
      return walked.error();
    }
    located = std::move(walked).value();
  }
  return open_located(std::move(located), path, opts);
}

// A path the daemon itself chose (/proc/PID/map_files/..., a host debug file): symlinks and
// magic links are followed as open() would, but only a regular file of at most max_size
// bytes is opened, so a FIFO or device in its place cannot block or be touched.
inline Result<UniqueFd> open_regular(const std::string& path, const SafeOpen& opts = {}) {
  using namespace safe_file_detail;
  UniqueFd located(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!located.valid()) {
    return from_errno(path, errno);
  }
  return open_located(std::move(located), path, opts);
}

// The whole content of FD, refusing more than max_bytes (a file that grew past its cap).
inline Result<std::string> read_capped(int fd, const std::string& path, std::size_t max_bytes) {
  std::string out;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return safe_file_detail::from_errno(path, errno);
    }
    if (n == 0) {
      return out;
    }
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      return safe_file_detail::refusal("too_large", path,
                                       "over the cap of " + std::to_string(max_bytes) + " bytes");
    }
  }
}

// open_in_root() and read_capped() in one.
inline Result<std::string> read_in_root(int root_fd, const std::string& path, std::size_t max_bytes,
                                        RootWalk walk = RootWalk::kAuto) {
  auto fd = open_in_root(root_fd, path, SafeOpen{max_bytes, walk});
  if (!fd.ok()) {
    return fd.error();
  }
  return read_capped(fd->get(), path, max_bytes);
}

}  // namespace cephscope
