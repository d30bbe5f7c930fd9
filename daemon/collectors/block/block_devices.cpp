#include "collectors/block/block_devices.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include "core/fs.h"

namespace cephscope {
namespace {

std::optional<std::uint32_t> read_dev(const std::filesystem::path& file) {
  std::ifstream in(file);
  unsigned major = 0;
  unsigned minor = 0;
  char colon = 0;
  if (in >> major >> colon >> minor && colon == ':') {
    return kernel_dev(major, minor);
  }
  return std::nullopt;
}

}  // namespace

std::string BlockDevices::name(std::uint32_t dev) {
  if (auto it = names_.find(dev); it != names_.end()) {
    return it->second;
  }
  const std::string majmin = std::to_string(dev >> 20) + ":" + std::to_string(dev & 0xFFFFF);
  std::string found = majmin;
  std::ifstream uevent(sys_ + "/dev/block/" + majmin + "/uevent");
  std::string line;
  while (std::getline(uevent, line)) {
    if (line.starts_with("DEVNAME=")) {
      found = line.substr(8);
      break;
    }
  }
  if (found != majmin) {
    names_.emplace(dev, found);  // cache only real names: a device may appear later
  }
  return found;
}

std::map<std::uint32_t, std::uint32_t> BlockDevices::partitions() const {
  namespace fs = std::filesystem;
  std::map<std::uint32_t, std::uint32_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sys_ + "/class/block", ec)) {
    if (!path_exists((entry.path() / "partition").string())) {
      continue;
    }
    const auto real = fs::canonical(entry.path(), ec);
    if (ec) {
      continue;
    }
    auto part = read_dev(real / "dev");
    auto disk = read_dev(real.parent_path() / "dev");
    if (part && disk) {
      out.emplace(*part, *disk);
    }
  }
  return out;
}

}  // namespace cephscope
