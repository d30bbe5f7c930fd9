#include "kernel/block_disks.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace cephscope::test {
namespace {

namespace fs = std::filesystem;

std::string majmin(dev_t dev) {
  return std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
}

// The block device a file system on anonymous device `dev` was mounted from.
std::optional<dev_t> mount_source(dev_t dev) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id;
    std::string parent;
    std::string mount_dev;
    fields >> id >> parent >> mount_dev;
    const auto dash = line.find(" - ");
    if (mount_dev != majmin(dev) || dash == std::string::npos) {
      continue;
    }
    std::istringstream tail(line.substr(dash + 3));
    std::string fs_type;
    std::string source;
    tail >> fs_type >> source;
    struct stat st {};
    if (stat(source.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
      return st.st_rdev;
    }
  }
  return std::nullopt;
}

std::string devname(const fs::path& sys_dev) {
  std::ifstream in(sys_dev / "uevent");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("DEVNAME=")) {
      return line.substr(8);
    }
  }
  return sys_dev.filename();
}

// `sys_dev`: a block device's own folder in sysfs.
void add_disks(const fs::path& sys_dev, std::set<std::string>& out, int depth) {
  if (depth > 8) {
    return;
  }
  if (fs::exists(sys_dev / "partition")) {
    add_disks(sys_dev.parent_path(), out, depth + 1);
    return;
  }
  bool stacked = false;
  std::error_code ec;
  for (const auto& lower : fs::directory_iterator(sys_dev / "slaves", ec)) {
    const fs::path real = fs::canonical(lower.path(), ec);
    if (!ec) {
      stacked = true;
      add_disks(real, out, depth + 1);
    }
  }
  if (!stacked) {
    out.insert(devname(sys_dev));
  }
}

}  // namespace

std::set<std::string> disks_behind(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    return {};
  }
  fs::path sys_dev = "/sys/dev/block/" + majmin(st.st_dev);
  if (!fs::exists(sys_dev)) {
    const auto source = mount_source(st.st_dev);
    if (!source) {
      return {};
    }
    sys_dev = "/sys/dev/block/" + majmin(*source);
  }
  std::error_code ec;
  const fs::path real = fs::canonical(sys_dev, ec);
  if (ec) {
    return {};
  }
  std::set<std::string> out;
  add_disks(real, out, 0);
  return out;
}

}  // namespace cephscope::test
