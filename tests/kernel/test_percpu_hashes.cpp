// How the collectors' per-CPU hashes get kernel memory (size_percpu_hashes in
// daemon/libbpf/maps.h), loaded into the running kernel through the collectors' own
// open_skeleton: preallocated within kPreallocatedHashBytesPerCpu per CPU each, whatever the
// object declares, and never setting off the verifier's warning of old kernels ("trace type BPF
// program uses run-time allocation"), which the 5.10 guest checks.
#include <bpf/bpf.h>
#include <sys/klog.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "bpf/osd.h"  // the types the skeleton's globals have
#include "collectors/bpf_collector.h"
#include "config/config.h"
#include "libbpf/features.h"
#include "libbpf/maps.h"
#include "libbpf/tracefs.h"
#include "osd.skel.h"
#include "rados.skel.h"
#include "syscall.skel.h"

namespace cephscope {
namespace {

struct HashFacts {
  std::uint32_t flags = 0;
  std::uint32_t max_entries = 0;
  std::uint32_t value_size = 0;
  long long memlock = -1;  // bytes, from the map's fdinfo
};

HashFacts facts_of(int fd) {
  bpf_map_info info{};
  std::uint32_t len = sizeof(info);
  REQUIRE(bpf_obj_get_info_by_fd(fd, &info, &len) == 0);
  HashFacts out{info.map_flags, info.max_entries, info.value_size, -1};
  std::ifstream fdinfo("/proc/self/fdinfo/" + std::to_string(fd));
  std::string key;
  while (fdinfo >> key) {
    if (key == "memlock:") {
      fdinfo >> out.memlock;
    }
  }
  return out;
}

// Opens an object as a collector does, loads all its programs, and reads its hash MAP.
template <typename Skel, void (*Destroy)(Skel*)>
HashFacts load_object(Skel* (*open)(), int (*load)(Skel*), const char* map,
                      const CollectorContext& ctx) {
  Skeleton<Skel, Destroy> skel;
  const Status opened = open_skeleton(skel, open, ctx);
  REQUIRE(opened.ok());
  // A bare fentry/fexit program takes its target from its collector (the syscalls' functions);
  // the object's other flavour loads here in its place.
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    const std::string section = bpf_program__section_name(prog);
    if (section == "fentry" || section == "fexit") {
      bpf_program__set_autoload(prog, false);
    }
  }
  REQUIRE(load(skel.get()) == 0);
  const bpf_map* hash = bpf_object__find_map_by_name(skel->obj, map);
  REQUIRE(hash != nullptr);
  return facts_of(bpf_map__fd(hash));
}

std::vector<std::pair<std::string, HashFacts>> load_all(const CollectorContext& ctx) {
  return {
      {"syscall_stats", load_object<syscall_bpf, syscall_bpf__destroy>(
                            syscall_bpf__open, syscall_bpf__load, "syscall_stats", ctx)},
      {"osd_stats",
       load_object<osd_bpf, osd_bpf__destroy>(osd_bpf__open, osd_bpf__load, "osd_stats", ctx)},
      {"rados_stats", load_object<rados_bpf, rados_bpf__destroy>(rados_bpf__open, rados_bpf__load,
                                                                 "rados_stats", ctx)},
  };
}

std::string kernel_log() {
  const int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  REQUIRE(size > 0);
  std::string buf(static_cast<std::size_t>(size), '\0');
  const int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf.data(), size);
  REQUIRE(n >= 0);
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

TEST_CASE("per-CPU hashes: preallocated within a budget per CPU, and no verifier warning",
          "[kernel][maps]") {
  const auto tracefs = ensure_tracefs(true);
  REQUIRE(tracefs.ok());
  const KernelFeatures features = KernelFeatures::probe(*tracefs);
  const Config config;
  const CollectorContext ctx{features, config, TrackedMaps{}, *tracefs};
  const auto cpus = static_cast<long long>(possible_cpus());

  const std::string marker = "uses run-time allocation";
  REQUIRE(kernel_log().find(marker) == std::string::npos);  // WARN_ONCE: one before hides ours
  for (const auto& [name, facts] : load_all(ctx)) {
    INFO(name << ": " << facts.max_entries << " entries of " << facts.value_size << " bytes, "
              << facts.memlock << " bytes of memlock on " << cpus << " CPUs, kernel "
              << features.kernel_release);
    CHECK((facts.flags & BPF_F_NO_PREALLOC) == 0);
    CHECK(facts.max_entries >= kPreallocatedHashMinEntries);
    const auto values = static_cast<long long>(facts.max_entries) * facts.value_size;
    CHECK((values <= static_cast<long long>(kPreallocatedHashBytesPerCpu) ||
           facts.max_entries == kPreallocatedHashMinEntries));
    // the values per CPU, plus each entry's key, bucket and element header
    CHECK(facts.memlock > 0);
    CHECK(facts.memlock <= values * cpus + 256LL * facts.max_entries + 65536);
  }
  CHECK(kernel_log().find(marker) == std::string::npos);
}

}  // namespace
}  // namespace cephscope
