// libFuzzer entry: the /proc parsers, every one on the same bytes: stat, cmdline (and the
// ceph-osd arguments in it), maps (discovery's library check, the profile's mapping parser),
// mountinfo (the kclient collector's CephFS mount points).
// A process sets its own comm and argv: none of this text is trusted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/kclient/kclient_names.h"
#include "discovery/classify.h"
#include "discovery/containers.h"
#include "discovery/proc.h"
#include "profile/process.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cephscope;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  ProcessInfo info;
  (void)parse_stat(std::string(text), info);
  (void)parse_cgroup(text);

  const std::vector<std::string> argv = parse_cmdline(text);
  const OsdArgs args = parse_osd_args(argv);
  (void)is_uuid(args.fsid);

  static const std::vector<std::string> kLibraries = {"librados.so.2", "libceph-common.so.2"};
  for (std::string_view rest = text; !rest.empty();) {
    const size_t nl = rest.find('\n');
    (void)maps_line_has_library(rest.substr(0, nl), kLibraries);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  }
  for (const profile::Mapping& m : profile::parse_maps(text)) {
    (void)profile::module_name_matches(m.path, "librados.so.2");
  }
  (void)kclient::parse_mount_points(std::string(text));
  return 0;
}
