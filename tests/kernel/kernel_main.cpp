// The kernel tests load BPF programs into the running kernel: they need root. Without it
// they are skipped (CTest exit code 77) with the reason printed, never silently passed.
#include <unistd.h>

#include <cstdio>
#include "catch_session.h"

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::printf("skipped: the kernel tests load BPF programs and need root\n");
    return 77;
  }
  return run_catch_session(argc, argv);
}
