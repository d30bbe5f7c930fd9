// The kclient collector's names: MDS operations, CephFS mount points from mountinfo, fsids.
#include <catch2/catch.hpp>

#include "collectors/kclient/kclient_names.h"

using namespace cephscope::kclient;

TEST_CASE("MDS operation codes are named as Ceph names them; unknown ones are other", "[unit]") {
  CHECK(std::string(mds_op_name(0x01301)) == "create");
  CHECK(std::string(mds_op_name(0x00100)) == "lookup");
  CHECK(std::string(mds_op_name(0x00101)) == "getattr");
  CHECK(std::string(mds_op_name(0x01108)) == "setattr");
  CHECK(std::string(mds_op_name(0x01203)) == "unlink");
  CHECK(std::string(mds_op_name(0x01220)) == "mkdir");
  CHECK(std::string(mds_op_name(0x12345)) == "other");
  CHECK(std::string(mds_op_name(0)) == "other");
}

TEST_CASE("CephFS mount points come from mountinfo by superblock device", "[unit]") {
  const std::string text =
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "140 29 0:52 / /mnt/ceph\\040fs rw,relatime shared:75 - ceph 127.0.0.1:6789:/ rw,name=admin\n"
      "141 29 0:52 / /srv/bind rw - ceph 127.0.0.1:6789:/ rw\n"
      "garbage\n"
      "150 29 9999:1 / /too-big-major rw - ext4 /dev/x rw\n"
      "151 29 8:1 / /data rw - ext4 /dev/sda1 rw\n";
  const auto points = parse_mount_points(text);
  REQUIRE(points.count(52) == 1);
  CHECK(points.at(52) == "/mnt/ceph fs");  // the first mount of the superblock, unescaped
  CHECK(points.at((8u << 20) | 1) == "/data");
  CHECK(points.at(21) == "/proc");
  CHECK(points.size() == 3);
  CHECK(parse_mount_points("").empty());
  CHECK(parse_mount_points("1 2 0:1 / /a\\0").at(1) == "/a\\0");  // a cut escape stays as it is
}

TEST_CASE("fsids print as Ceph prints them", "[unit]") {
  const std::uint8_t fsid[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
                                 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  CHECK(fsid_text(fsid) == "12345678-9abc-def0-0123-456789abcdef");
}
