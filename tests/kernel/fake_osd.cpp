// A process that discovery takes for a ceph-osd once copied to a file named ceph-osd and run
// with `-i N`: it only waits. Its build has no OSD functions, which no test here needs.
#include <unistd.h>

int main() {
  for (;;) {
    pause();
  }
}
