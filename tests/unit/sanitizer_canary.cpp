// A known bug of each kind the sanitized tree must report, built with the daemon's sanitizer
// flags (tests/unit/CMakeLists.txt, only in a tree configured with CEPHSCOPE_SANITIZE).
// .ci/sanitize runs each one and checks that the report names the bug and this file's line,
// which the canary prints before it does the bad thing: the proof that the tree's optimisation
// level keeps the reports exact.
//
//   sanitizer_canary heap-buffer-overflow | heap-use-after-free | signed-integer-overflow
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace {

// The index and the operands come from volatile storage, so the compiler cannot see the bug
// and fold it away at any optimisation level.
volatile int g_index = 8;
volatile int g_big = INT_MAX;

void announce(int line) {
  std::printf("sanitizer_canary.cpp:%d\n", line);
  std::fflush(stdout);
}

int heap_buffer_overflow() {
  std::vector<int> v(8, 1);
  announce(__LINE__ + 1);
  return v.data()[g_index];
}

int heap_use_after_free() {
  auto p = std::make_unique<int[]>(8);
  int* raw = p.get();
  p.reset();
  announce(__LINE__ + 1);
  return raw[g_index - 8];
}

int signed_integer_overflow() {
  int a = g_big;
  announce(__LINE__ + 1);
  return a + g_index;
}

}  // namespace

int main(int argc, char** argv) {
  const char* kind = argc == 2 ? argv[1] : "";
  if (std::strcmp(kind, "heap-buffer-overflow") == 0) {
    return heap_buffer_overflow() == 0 ? 0 : 3;
  }
  if (std::strcmp(kind, "heap-use-after-free") == 0) {
    return heap_use_after_free() == 0 ? 0 : 3;
  }
  if (std::strcmp(kind, "signed-integer-overflow") == 0) {
    return signed_integer_overflow() == 0 ? 0 : 3;
  }
  std::fprintf(stderr,
               "usage: sanitizer_canary heap-buffer-overflow | heap-use-after-free | "
               "signed-integer-overflow\n");
  return 2;
}
