#include "support/bpf_held.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cephscope::test {

HeldIds held_by(pid_t pid) {
  HeldIds out;
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo", ec)) {
    std::ifstream in(fd.path());
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string key;
      __u32 id = 0;
      if (!(fields >> key >> id)) {
        continue;
      }
      if (key == "prog_id:") {
        out.progs.insert(id);
      } else if (key == "link_id:") {
        out.links.insert(id);
      }
    }
  }
  return out;
}

std::set<__u32> link_ids() {
  std::set<__u32> ids;
  __u32 id = 0;
  while (bpf_link_get_next_id(id, &id) == 0) {
    ids.insert(id);
  }
  return ids;
}

bool prog_exists(__u32 id) {
  const int fd = bpf_prog_get_fd_by_id(id);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return errno != ENOENT;
}

}  // namespace cephscope::test
