#include "collectors/rados/client_libraries.h"

#include <sys/stat.h>

namespace cephscope::rados {
namespace {

#if defined(__x86_64__)
constexpr const char* kMultiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr const char* kMultiarch = "aarch64-linux-gnu";
#else
constexpr const char* kMultiarch = "";
#endif

}  // namespace

std::vector<std::string> library_dirs() {
  std::vector<std::string> dirs;
  if (*kMultiarch != '\0') {
    dirs.push_back(std::string("/usr/lib/") + kMultiarch);
    dirs.push_back(std::string("/usr/lib/") + kMultiarch + "/ceph");
  }
  for (const char* d : {"/usr/lib64", "/usr/lib64/ceph", "/usr/lib", "/usr/lib/ceph"}) {
    dirs.emplace_back(d);
  }
  return dirs;
}

std::optional<std::uint64_t> inode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return st.st_ino;
}

}  // namespace cephscope::rados
