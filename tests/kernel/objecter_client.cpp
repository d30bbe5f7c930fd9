// A librados client as the rados collector's marker test sees one: it maps the stand-in
// librados.so.2 (objecter_markers.cpp), waits for the file argv[1] to appear (the daemon has
// attached by then), runs a known mix of ops through its markers, prints what it did and
// "done", and waits to be killed.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" {
void objecter_fixture_op(std::uint64_t tid, const char* object, const char* ops, int sends,
                         unsigned wait_us);
long objecter_fixture_fired_sends();
long objecter_fixture_fired_finishes();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: objecter_client GO_FILE\n");
    return 2;
  }
  while (access(argv[1], F_OK) != 0) {
    usleep(20'000);
  }
  std::uint64_t tid = 0;
  long sends = 0;
  auto op = [&](const char* ops, int times, unsigned wait_us) {
    objecter_fixture_op(++tid, "rbd_data.1234abcd.0000000000000001", ops, times, wait_us);
    sends += times;
  };
  // 200 writes of 4 KiB: one a resend, one slow (0.3 s)
  for (int i = 0; i < 200; ++i) {
    const char* ops = i % 2 == 0
                          ? "writefull 0~4096"
                          : "set-alloc-hint object_size 4194304 write_size 4194304;write 4096~4096";
    op(ops, i == 7 ? 2 : 1, i == 99 ? 300'000 : 1'000);
  }
  // 100 reads of 8 KiB
  for (int i = 0; i < 100; ++i) {
    op(i % 2 == 0 ? "read 0~8192" : "sparse-read 8192~8192", 1, 1'000);
  }
  // 20 ops that move no data
  for (int i = 0; i < 20; ++i) {
    op(i % 2 == 0 ? "stat" : "call rbd.get_size", 1, 1'000);
  }
  // one whose write lies past the bytes a probe reads of the string: other, no bytes
  const std::string long_ops = "omap-set-vals " + std::string(150, 'k') + ";write 0~4096";
  op(long_ops.c_str(), 1, 1'000);
  std::printf("ops %llu sends %ld fired %ld finishes %ld\ndone\n",
              static_cast<unsigned long long>(tid), sends, objecter_fixture_fired_sends(),
              objecter_fixture_fired_finishes());
  std::fflush(stdout);
  for (;;) {
    pause();
  }
}
