// main() of the e2e test programs: skips (exit 77, CTest's SKIP_RETURN_CODE) unless run as root
// against a test cluster named by CEPHSCOPE_CEPH_DIR, then runs the Catch2 session.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include "catch_session.h"

namespace {
constexpr int kSkip = 77;
}

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::printf("skipped: needs root (the e2e tests drive a real Ceph cluster)\n");
    return kSkip;
  }
  const char* dir = std::getenv("CEPHSCOPE_CEPH_DIR");
  if (dir == nullptr || *dir == '\0') {
    std::printf(
        "skipped: no test cluster: CEPHSCOPE_CEPH_DIR is unset (run through ctest -L e2e, or "
        "tests/ceph/cluster.sh up DIR and set CEPHSCOPE_CEPH_DIR=DIR)\n");
    return kSkip;
  }
  int rc = run_catch_session(argc, argv);
  return rc == kSkip ? 1 : rc;  // 77 failed assertions must not read as "skipped"
}
