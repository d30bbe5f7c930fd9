#include "libbpf/prog_stats.h"

#include <bpf/bpf.h>

namespace cephscope {

ProgramStats program_stats(const bpf_program* prog) {
  const int fd = bpf_program__fd(prog);
  if (fd < 0) {
    return {};
  }
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) {
    return {};
  }
  return {info.run_time_ns, info.run_cnt, info.recursion_misses};
}

}  // namespace cephscope
