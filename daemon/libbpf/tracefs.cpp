#include "libbpf/tracefs.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include "core/fs.h"

namespace cephscope {

Result<std::string> ensure_tracefs(bool may_mount) {
  const int err = path_errno(std::string(kTracefsDir) + "/events");
  if (err == 0) {
    return std::string(kTracefsDir);
  }
  if (err == EACCES) {
    return make_error(
        ErrorKind::kSystem,
        std::string("tracefs at ") + kTracefsDir +
            " is not readable (permission denied): the daemon needs CAP_DAC_READ_SEARCH",
        err);
  }
  if (path_exists("/sys/kernel/debug/tracing/events")) {
    return std::string("/sys/kernel/debug/tracing");
  }
  const std::string how = std::string("mount it with: mount -t tracefs tracefs ") + kTracefsDir;
  if (!may_mount) {
    return make_error(ErrorKind::kUnsupported,
                      "tracefs is not mounted and mount_tracefs is false; " + how);
  }
  if (mount("tracefs", kTracefsDir, "tracefs", 0, nullptr) != 0) {
    const int err = errno;
    return make_error(ErrorKind::kSystem,
                      std::string("tracefs is not mounted and mounting it failed (") +
                          std::strerror(err) + "); " + how,
                      err);
  }
  return std::string(kTracefsDir);
}

}  // namespace cephscope
