// The price of each piece of a uprobe program on this host, so that every byte, call and map
// operation of the OSD collector's tier 1 has one: the trap alone, an empty program, one
// bpf_probe_read_user() of 8 B to 2 KiB, 16 reads of 8 B, a per-CPU array update and a hash
// lookup (tests/bench/uprobe_floor.bpf.c), each attached alone to one function that this
// program calls in a loop, with the memory it reads written last by the calling thread
// ("local") or by a thread on the other CPU ("remote"). Program time from bpf_stats (enabled
// by this program while it runs), the trap from the wall time of the calls; rounds rotate
// the pieces and the median of each is printed. A benchmark: it asserts nothing. Root.
//
//   uprobe_floor [CALLS_PER_ROUND] [ROUNDS]        (defaults 100000 and 5)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "uprobe_floor.skel.h"

// The probed function: its first instruction a push, which the kernel emulates, as at most
// function entries of ceph-osd.
extern "C" long cephscope_floor_probed(const void* p);
__asm__(
    ".globl cephscope_floor_probed\n.type cephscope_floor_probed,@function\n"
    "cephscope_floor_probed:\n push %rbp\n mov %rdi,%rax\n pop %rbp\n ret\n"
    ".size cephscope_floor_probed, .-cephscope_floor_probed\n");

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBuffer = 4096;

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// ns per call of `calls` calls, the buffer written before each by this thread (remote: by a
// thread on CPU 1, which hands each write over before the call).
double run_calls(long calls, bool remote, unsigned char* buffer) {
  pin(0);
  std::atomic<long> written{-1};   // the writer's last write
  std::atomic<long> consumed{-1};  // the caller's last call
  std::thread writer;
  if (remote) {
    writer = std::thread([&] {
      pin(1);
      for (long i = 0; i < calls; ++i) {
        while (consumed.load(std::memory_order_acquire) != i - 1) {
        }
        std::memset(buffer, static_cast<int>(i), kBuffer);
        written.store(i, std::memory_order_release);
      }
    });
  }
  long sink = 0;
  const auto t0 = Clock::now();
  for (long i = 0; i < calls; ++i) {
    if (remote) {
      while (written.load(std::memory_order_acquire) != i) {
      }
    } else {
      std::memset(buffer, static_cast<int>(i), kBuffer);
    }
    sink += cephscope_floor_probed(buffer);
    consumed.store(i, std::memory_order_release);
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  if (writer.joinable()) {
    writer.join();
  }
  if (sink == 42) {  // keeps the calls
    std::puts("");
  }
  return ns / static_cast<double>(calls);
}

struct RunStats {
  __u64 ns = 0;
  __u64 count = 0;
};

RunStats run_stats(const bpf_program* prog) {
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) != 0) {
    return {};
  }
  return {info.run_time_ns, info.run_cnt};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  const long calls = argc > 1 ? std::atol(argv[1]) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (geteuid() != 0) {
    std::fprintf(stderr, "uprobe_floor: needs root\n");
    return 77;
  }
  if (std::thread::hardware_concurrency() < 2) {
    std::fprintf(stderr, "uprobe_floor: needs two CPUs (the remote writer)\n");
    return 77;
  }
  uprobe_floor_bpf* skel = uprobe_floor_bpf__open_and_load();
  if (skel == nullptr) {
    std::fprintf(stderr, "uprobe_floor: cannot load the programs: %s\n", std::strerror(errno));
    return 1;
  }
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (stats_fd < 0) {
    std::fprintf(stderr, "uprobe_floor: bpf_enable_stats: %s\n", std::strerror(errno));
    return 1;
  }
  const auto tgid = static_cast<__u32>(getpid());
  const __u64 one = 1;
  bpf_map__update_elem(skel->maps.by_tgid, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY);

  const std::vector<std::pair<std::string, bpf_program*>> pieces = {
      {"empty program", skel->progs.empty},
      {"read 8 B", skel->progs.read_8},
      {"read 64 B", skel->progs.read_64},
      {"read 512 B", skel->progs.read_512},
      {"read 1 KiB", skel->progs.read_1024},
      {"read 2 KiB", skel->progs.read_2048},
      {"16 reads of 8 B", skel->progs.reads_16x8},
      {"per-CPU array update", skel->progs.percpu_update},
      {"hash lookup", skel->progs.hash_lookup},
  };
  std::array<unsigned char, kBuffer> buffer{};
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "cephscope_floor_probed");
  std::map<std::string, std::vector<double>> bpf_ns[2];
  std::map<std::string, std::vector<double>> wall_ns[2];
  std::vector<double> bare[2];
  for (int round = 0; round < rounds; ++round) {
    for (int remote = 0; remote < 2; ++remote) {
      bare[remote].push_back(run_calls(calls, remote != 0, buffer.data()));
      // rotate: each round starts one piece further on
      for (std::size_t k = 0; k < pieces.size(); ++k) {
        const auto& [name, prog] = pieces[(k + static_cast<std::size_t>(round)) % pieces.size()];
        bpf_link* link =
            bpf_program__attach_uprobe_opts(prog, getpid(), "/proc/self/exe", 0, &opts);
        if (link == nullptr) {
          std::fprintf(stderr, "uprobe_floor: attach %s: %s\n", name.c_str(), std::strerror(errno));
          return 1;
        }
        const RunStats before = run_stats(prog);
        const double wall = run_calls(calls, remote != 0, buffer.data());
        const RunStats after = run_stats(prog);
        bpf_link__destroy(link);
        const __u64 hits = after.count - before.count;
        bpf_ns[remote][name].push_back(
            hits == 0 ? 0 : static_cast<double>(after.ns - before.ns) / static_cast<double>(hits));
        wall_ns[remote][name].push_back(wall);
      }
    }
  }
  close(stats_fd);

  std::printf(
      "uprobe hit prices on this host: %ld calls per piece and round, median of %d rounds\n", calls,
      rounds);
  std::printf("%-24s %14s %14s %16s %16s\n", "piece", "BPF ns local", "BPF ns remote",
              "wall ns local", "wall ns remote");
  std::printf("%-24s %14s %14s %16.0f %16.0f\n", "no probe", "-", "-", median(bare[0]),
              median(bare[1]));
  for (const auto& [name, prog] : pieces) {
    std::printf("%-24s %14.0f %14.0f %16.0f %16.0f\n", name.c_str(), median(bpf_ns[0][name]),
                median(bpf_ns[1][name]), median(wall_ns[0][name]), median(wall_ns[1][name]));
  }
  // the trap: what a hit adds to a call beyond the program's own run time
  for (int remote = 0; remote < 2; ++remote) {
    const std::string name = "empty program";
    std::printf(
        "trap alone (%s): %.0f ns (wall with the empty program, less the call without "
        "a probe and the program's run time)\n",
        remote != 0 ? "remote" : "local",
        median(wall_ns[remote][name]) - median(bare[remote]) - median(bpf_ns[remote][name]));
  }
  uprobe_floor_bpf__destroy(skel);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "uprobe_floor: %s\n", e.what());
  return 1;
}
