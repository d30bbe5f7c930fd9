#include "collectors/kclient/kclient_names.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

namespace cephscope::kclient {

const char* mds_op_name(std::uint32_t code) {
  // CEPH_MDS_OP_* (Linux include/linux/ceph/ceph_fs.h, Ceph src/include/ceph_fs.h)
  static const std::unordered_map<std::uint32_t, const char*> kNames = {
      {0x00100, "lookup"},       {0x00101, "getattr"},      {0x00102, "lookuphash"},
      {0x00103, "lookupparent"}, {0x00104, "lookupino"},    {0x00105, "lookupname"},
      {0x00106, "getvxattr"},    {0x01105, "setxattr"},     {0x01106, "rmxattr"},
      {0x01107, "setlayout"},    {0x01108, "setattr"},      {0x01109, "setfilelock"},
      {0x00110, "getfilelock"},  {0x0110a, "setdirlayout"}, {0x01201, "mknod"},
      {0x01202, "link"},         {0x01203, "unlink"},       {0x01204, "rename"},
      {0x01220, "mkdir"},        {0x01221, "rmdir"},        {0x01222, "symlink"},
      {0x01301, "create"},       {0x00302, "open"},         {0x00305, "readdir"},
      {0x00400, "lookupsnap"},   {0x01400, "mksnap"},       {0x01401, "rmsnap"},
      {0x00402, "lssnap"},       {0x01403, "renamesnap"},
  };
  auto it = kNames.find(code);
  return it == kNames.end() ? "other" : it->second;
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        s.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos) {
      out.push_back(
          static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::unordered_map<std::uint32_t, std::string> parse_mount_points(const std::string& text) {
  std::unordered_map<std::uint32_t, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT ...
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) {
      continue;
    }
    unsigned major = 0, minor = 0;
    char colon = 0;
    std::istringstream d(dev);
    if (!(d >> major >> colon >> minor) || colon != ':' || major >= (1u << 12) ||
        minor >= (1u << 20)) {
      continue;
    }
    out.try_emplace((major << 20) | minor, unescape(point));
  }
  return out;
}

std::unordered_map<std::uint32_t, std::string> mount_points(const std::string& path,
                                                            std::size_t max_bytes) {
  std::ifstream f(path);
  std::string text(max_bytes, '\0');
  f.read(text.data(), static_cast<std::streamsize>(max_bytes));
  text.resize(static_cast<std::size_t>(f.gcount()));
  return parse_mount_points(text);
}

std::string fsid_text(const std::uint8_t (&fsid)[16]) {
  std::string out;
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out.push_back('-');
    }
    std::snprintf(hex, sizeof(hex), "%02x", fsid[i]);
    out += hex;
  }
  return out;
}

}  // namespace cephscope::kclient
