// The client library files the rados collector probes: where the daemon's own root keeps them,
// and how a file is known to the uprobes on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cephscope::rados {

// A library file as uprobes see it: its build-id and inode number. Uprobes go on the file
// itself, under overlayfs the layer's file, which every container of an image shares; maps
// and stat() give each container's overlay a device of its own but the layer file's inode
// number (the device would key one file twice, and its probes would fire twice per call). Two
// files on different file systems with the same inode number and the same build would be
// probed through the first only.
using FileKey = std::pair<std::string, std::uint64_t>;

// Where the daemon's own root keeps the client libraries (Debian's multiarch directory,
// Ceph's private directory beside it, and the other distributions' lib64).
std::vector<std::string> library_dirs();

// The inode number of PATH, or nothing when it is not there.
std::optional<std::uint64_t> inode_of(const std::string& path);

}  // namespace cephscope::rados
