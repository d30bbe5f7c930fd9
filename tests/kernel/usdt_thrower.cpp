// A program whose static markers the usdt test counts: it waits for the file argv[2] to
// appear (the daemon has attached by then), throws and catches exactly argv[1] exceptions
// through libstdc++ (each hits its libstdcxx:throw and catch markers once), prints "done"
// and waits to be killed. Linked dynamically: the markers are libstdc++.so.6's.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: usdt_thrower COUNT GO_FILE\n");
    return 2;
  }
  const long count = std::strtol(argv[1], nullptr, 10);
  while (access(argv[2], F_OK) != 0) {
    usleep(20'000);
  }
  long caught = 0;
  for (long i = 0; i < count; ++i) {
    try {
      throw std::runtime_error("counted");
    } catch (const std::runtime_error&) {
      ++caught;
    }
  }
  std::printf("done %ld\n", caught);
  std::fflush(stdout);
  for (;;) {
    pause();
  }
}
