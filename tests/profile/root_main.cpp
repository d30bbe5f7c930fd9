// Catch2 main for the root-only layers: exits 77 (CTest's SKIP_RETURN_CODE) with the reason
// when the test cannot run here, instead of failing or passing silently.
#define CATCH_CONFIG_RUNNER
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>

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
  return Catch::Session().run(argc, argv);
}
