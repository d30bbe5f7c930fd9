#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>

#include "collectors/bpf_collector.h"

// The benchmarks' cut (CEPHSCOPE_BENCH_OSD_CUT): a deployed daemon must never run cut programs
// by accident, so anything but a digit in range is 0.

namespace {
constexpr const char* kVariable = "CEPHSCOPE_TEST_BENCH_CUT";

std::uint32_t cut_of(const char* value) {
  if (value == nullptr) {
    ::unsetenv(kVariable);
  } else {
    ::setenv(kVariable, value, 1);
  }
  const std::uint32_t cut = cephscope::bench_cut("test", kVariable, 4);
  ::unsetenv(kVariable);
  return cut;
}
}  // namespace

TEST_CASE("a benchmark cut is a digit from 1 to its maximum, anything else none",
          "[bench][config]") {
  CHECK(cut_of(nullptr) == 0);
  CHECK(cut_of("") == 0);
  CHECK(cut_of("1") == 1);
  CHECK(cut_of("4") == 4);
  CHECK(cut_of("0") == 0);
  CHECK(cut_of("5") == 0);
  CHECK(cut_of("12") == 0);
  CHECK(cut_of("1 ") == 0);
  CHECK(cut_of("x") == 0);
}
