// A stand-in librados.so.2 for the rados collector's marker test: no Objecter, no debug info,
// only the two static markers Ceph's proposed Objecter tracing adds (objecter_send_op with the
// op's tid, pool, object, target OSD and ops string; objecter_finish_op with its tid and
// result), each behind its semaphore, as a Ceph build with them would carry them. No Debian
// build of Ceph has these markers.
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

extern "C" {
// The semaphores the kernel raises while a probe is attached (sys/sdt.h names them).
__extension__ unsigned short objecter_objecter_send_op_semaphore
    __attribute__((unused, section(".probes"))) = 0;
__extension__ unsigned short objecter_objecter_finish_op_semaphore
    __attribute__((unused, section(".probes"))) = 0;
}

namespace {
std::atomic<long> fired_sends{0};
std::atomic<long> fired_finishes{0};

// Not inlined, so that each marker has one site per function, as in Ceph's Objecter.
__attribute__((noinline)) void send_op(std::uint64_t tid, std::int64_t pool, const char* object,
                                       int osd, const char* ops) {
  if (objecter_objecter_send_op_semaphore != 0) {
    fired_sends.fetch_add(1);
    STAP_PROBE5(objecter, objecter_send_op, tid, pool, object, osd, ops);
  }
}

__attribute__((noinline)) void finish_op(std::uint64_t tid, int result) {
  if (objecter_objecter_finish_op_semaphore != 0) {
    fired_finishes.fetch_add(1);
    STAP_PROBE2(objecter, objecter_finish_op, tid, result);
  }
}
}  // namespace

extern "C" {

// One op: sent (SENDS times: a resend keeps its tid), and finished after WAIT_US on another
// thread, as a messenger thread finishes an Objecter op. The marker's strings are made just
// before it, as Ceph formats an op's description (a probe reads only memory already in).
__attribute__((visibility("default"))) void objecter_fixture_op(std::uint64_t tid,
                                                                const char* object, const char* ops,
                                                                int sends, unsigned wait_us) {
  const std::string name(object);
  const std::string described(ops);
  for (int i = 0; i < sends; ++i) {
    send_op(tid, 1, name.c_str(), 0, described.c_str());
  }
  std::thread([tid, wait_us] {
    usleep(wait_us);
    finish_op(tid, 0);
  }).join();
}

// How many sends and finishes fired their markers (their semaphores were raised).
__attribute__((visibility("default"))) long objecter_fixture_fired_sends() {
  return fired_sends.load();
}
__attribute__((visibility("default"))) long objecter_fixture_fired_finishes() {
  return fired_finishes.load();
}
}
