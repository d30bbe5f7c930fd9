// File checks that never throw: std::filesystem::exists throws on EACCES, which a daemon
// running with few privileges meets on tracefs and /proc.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace cephscope {

// 0 when the path exists, else the errno of stat() (ENOENT, EACCES, ...).
inline int path_errno(const std::string& path) noexcept {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? 0 : errno;
}

inline bool path_exists(const std::string& path) noexcept {
  return path_errno(path) == 0;
}
inline bool path_exists(const char* path) noexcept {
  return path_errno(path) == 0;
}

}  // namespace cephscope
