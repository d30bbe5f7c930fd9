// Block device names and the partition -> disk map, from /sys (trusted: the host's own).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace cephscope {

// Kernel-internal dev_t as block tracepoints report it: major << 20 | minor.
inline std::uint32_t kernel_dev(unsigned major, unsigned minor) {
  return (major << 20) | minor;
}

class BlockDevices {
 public:
  explicit BlockDevices(std::string sys_root = "/sys") : sys_(std::move(sys_root)) {}

  // "vda", "nvme0n1" (no /dev/), as node_exporter names devices; "MAJ:MIN" when unknown.
  std::string name(std::uint32_t dev);
  // Every partition's dev and its whole disk's dev.
  [[nodiscard]] std::map<std::uint32_t, std::uint32_t> partitions() const;

 private:
  std::string sys_;
  std::map<std::uint32_t, std::string> names_;
};

}  // namespace cephscope
