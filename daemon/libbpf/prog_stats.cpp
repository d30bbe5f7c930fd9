#include "libbpf/prog_stats.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cephscope {

Result<ProgramStats> program_stats(const bpf_program* prog) {
  const int fd = bpf_program__fd(prog);
  if (fd < 0) {
    return make_error(ErrorKind::kNotFound,
                      std::string("program ") + bpf_program__name(prog) + " is not loaded");
  }
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) {
    const int err = errno;
    return errno_error(std::string("bpf_obj_get_info_by_fd on program ") + bpf_program__name(prog),
                       err);
  }
  return ProgramStats{info.run_time_ns, info.run_cnt, info.recursion_misses};
}

}  // namespace cephscope
