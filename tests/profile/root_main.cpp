// Catch2 main for the root-only layers: exits 77 (CTest's SKIP_RETURN_CODE) with the reason
// when the test cannot run here, instead of failing or passing silently.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include "catch_session.h"

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    std::printf("skipped: needs root (uprobes, BPF, /proc/PID/map_files)\n");
    return 77;
  }
#ifdef PROFILE_NEEDS_CEPH
  for (const char* path : {"/usr/bin/ceph-osd", "/usr/lib/x86_64-linux-gnu/librados.so.2"}) {
    if (!std::filesystem::exists(path)) {
      std::printf("skipped: %s missing (tests/ceph/install.sh installs Ceph and its -dbg)\n", path);
      return 77;
    }
  }
#endif
  return run_catch_session(argc, argv);
}
