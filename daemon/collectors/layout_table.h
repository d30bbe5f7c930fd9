// Per-process member layouts as the osd and rados programs find them (bpf/layouts.bpf.h): a
// direct-mapped BPF array, slot = tgid modulo its size, holding the first process of each
// slot, and a hash holding every process (the programs look there when the slot is another's).
#pragma once

#include <bpf/bpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "core/result.h"

namespace cephscope {

// Layout is a BPF layout struct whose first member is its tgid.
template <typename Layout>
class LayoutTable {
 public:
  LayoutTable(int slots_fd, int all_fd, std::uint32_t slots)
      : slots_fd_(slots_fd), all_fd_(all_fd), slots_(slots) {}

  // Stores (or replaces) TGID's layout.
  Status put(std::uint32_t tgid, Layout layout) {
    layout.tgid = tgid;
    std::lock_guard lock(mu_);
    if (bpf_map_update_elem(all_fd_, &tgid, &layout, BPF_ANY) != 0) {
      return system_error("store");
    }
    const std::uint32_t slot = tgid & (slots_ - 1);
    auto owner = owners_.find(slot);
    if (owner != owners_.end() && owner->second != tgid) {
      return ok_status();  // the slot is another's: the programs find this one in the hash
    }
    if (bpf_map_update_elem(slots_fd_, &slot, &layout, BPF_ANY) != 0) {
      return system_error("store the slot of");
    }
    owners_[slot] = tgid;
    return ok_status();
  }

  // Forgets TGID's layout; its slot is left empty (a process of the same slot that came later
  // stays in the hash, where the programs find it).
  Status erase(std::uint32_t tgid) {
    std::lock_guard lock(mu_);
    const std::uint32_t slot = tgid & (slots_ - 1);
    if (auto owner = owners_.find(slot); owner != owners_.end() && owner->second == tgid) {
      const Layout empty{};
      if (bpf_map_update_elem(slots_fd_, &slot, &empty, BPF_ANY) != 0) {
        return system_error("clear the slot of");
      }
      owners_.erase(owner);
    }
    if (bpf_map_delete_elem(all_fd_, &tgid) != 0 && errno != ENOENT) {
      return system_error("delete");
    }
    return ok_status();
  }

 private:
  static Status system_error(const char* what) {
    const int err = errno;
    return make_error(ErrorKind::kSystem,
                      std::string("cannot ") + what + " the layout: " + std::strerror(err), err);
  }

  int slots_fd_ = -1;
  int all_fd_ = -1;
  std::uint32_t slots_ = 1;
  std::mutex mu_;
  std::map<std::uint32_t, std::uint32_t> owners_;  // slot -> tgid
};

}  // namespace cephscope
