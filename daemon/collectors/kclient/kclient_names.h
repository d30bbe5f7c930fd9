// Names of the kernel client's codes and objects: MDS operations, CephFS mount points,
// fsids. Apart from the collector so that the unit tests and the fuzzers reach them.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace cephscope::kclient {

// The `op` label of an MDS request: CEPH_MDS_OP_* as Ceph names it (lowercase), "other" for a
// code this table does not know.
const char* mds_op_name(std::uint32_t code);

// The mount point of each superblock device in a mountinfo text (the first mount of each),
// keyed by the kernel's s_dev encoding (major << 20 | minor), octal escapes undone. Lines
// that do not parse are skipped; at most `max_bytes` of the file are read.
std::unordered_map<std::uint32_t, std::string> parse_mount_points(const std::string& text);
std::unordered_map<std::uint32_t, std::string> mount_points(const std::string& path,
                                                            std::size_t max_bytes = 4 << 20);

// A 16-byte fsid as Ceph prints it (8-4-4-4-12 hex).
std::string fsid_text(const std::uint8_t (&fsid)[16]);

}  // namespace cephscope::kclient
