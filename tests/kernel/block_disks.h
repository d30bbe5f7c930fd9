// The disks behind a directory, named as the block collector names them.
#pragma once

#include <set>
#include <string>

namespace cephscope::test {

// The disks whose request queues serve `dir`'s file system, by their uevent DEVNAME ("vda",
// "nvme0n1", "sda"), as the block collector labels devices. Found from stat() and sysfs: the
// file system's device (for an anonymous one, e.g. btrfs, the source of its mount in
// /proc/self/mountinfo), a partition's whole disk, and the disks under a stacked device (LVM,
// dm-crypt, md). Empty when `dir` is not on a block device.
std::set<std::string> disks_behind(const std::string& dir);

}  // namespace cephscope::test
