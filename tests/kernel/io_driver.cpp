// A program whose IO is known exactly: N pwrite64() of K bytes with O_DIRECT, M fdatasync(),
// then R read() of K bytes. It waits for a "go" file before the first IO so the daemon can
// start tracking it, and makes no other read/write syscall once it has started: the counts
// cephscope reports must equal these arguments. Linked statically, so no dynamic loader
// reads libraries while discovery is picking the process up.
// With --wait-in-preadv2 FIFO GO_FILE it makes one call only, once GO_FILE exists: a preadv2()
// of one byte from FIFO, which lasts until someone writes to it.
#include <fcntl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "io_driver: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void wait_for_file(const char* path) {
  const timespec tick{0, 2'000'000};
  while (access(path, F_OK) != 0) {
    nanosleep(&tick, nullptr);
  }
}

int wait_in_preadv2(const char* fifo, const char* go) {
  const int fd = open(fifo, O_RDWR);  // read-write: the open itself never waits for a writer
  if (fd < 0) {
    fail("open FIFO");
  }
  char byte = 0;
  iovec one{&byte, 1};
  wait_for_file(go);
  if (preadv2(fd, &one, 1, -1, 0) != 1) {  // offset -1: the FIFO's own position
    fail("preadv2");
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--wait-in-preadv2") == 0) {
    return wait_in_preadv2(argv[2], argv[3]);
  }
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s FILE GO_FILE WRITES SIZE SYNCS READS\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  const char* go = argv[2];
  const long writes = std::atol(argv[3]);
  const long size = std::atol(argv[4]);
  const long syncs = std::atol(argv[5]);
  const long reads = std::atol(argv[6]);
  if (size <= 0 || size % 4096 != 0 || reads > writes) {
    std::fprintf(stderr, "io_driver: SIZE must be a multiple of 4096 and READS <= WRITES\n");
    return 2;
  }
  // The caller allocated and synced the file before starting us (see io_workload.cpp): the
  // writes need no metadata IO of their own, and no set-up fsync counts as ours.
  const int fd = open(path, O_RDWR | O_DIRECT);
  if (fd < 0) {
    fail("open (O_DIRECT needs a file system on a block device)");
  }
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, static_cast<std::size_t>(size)) != 0) {
    fail("posix_memalign");
  }
  std::memset(buf, 0x5a, static_cast<std::size_t>(size));
  wait_for_file(go);
  for (long i = 0; i < writes; ++i) {
    if (pwrite(fd, buf, static_cast<std::size_t>(size), i * size) != size) {
      fail("pwrite");
    }
  }
  for (long i = 0; i < syncs; ++i) {
    if (fdatasync(fd) != 0) {
      fail("fdatasync");
    }
  }
  if (lseek(fd, 0, SEEK_SET) != 0) {
    fail("lseek");
  }
  for (long i = 0; i < reads; ++i) {
    if (read(fd, buf, static_cast<std::size_t>(size)) != size) {
      fail("read");
    }
  }
  _exit(0);  // no stdio flush: no write syscall after the measured IO
}
