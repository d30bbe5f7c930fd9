// The price of each piece of a uprobe program on this host, so that every byte, call and map
// operation of the OSD collector's tier 1 has one: the trap alone, an empty program, one
// bpf_probe_read_user() of 8 B to 2 KiB, 16 reads of 8 B, 4 reads on 4 pages, a per-CPU
// array update, a hash lookup and the least tier 1 does at an op's end
// (tests/bench/uprobe_floor.bpf.c), each attached alone to one function that this program
// calls in a loop, with the memory it reads written last by the calling thread ("local"), by
// a thread on the other CPU ("remote"), or by the calling thread before it swept a region
// larger than the caches ("cold": the memory, the page tables that map it and the maps'
// values are out of cache and TLB, as in a busy ceph-osd, whose ops are read long after other
// threads wrote them). Program time from bpf_stats (enabled by this program while it runs),
// the trap from the wall time of the calls; rounds rotate the pieces and the median of each
// is printed. A benchmark: it asserts nothing. Root.
//
//   uprobe_floor [CALLS_PER_ROUND] [ROUNDS] [COLD_MIB]
//   (defaults 100000, 5 and 64; the cold column makes 1/100 of the calls, at least 1,000)
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
constexpr std::size_t kPage = 4096;
constexpr std::size_t kBuffer = 4 * kPage;  // reads_4_pages reads 4 pages
constexpr std::size_t kLine = 64;

enum class Mode { local, remote, cold };
constexpr std::array<const char*, 3> kModeNames = {"local", "remote", "cold"};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Writes the buffer for call i: its first word points two pages on, where op_minimum reads
// the "events" an op points to.
void fill(unsigned char* buffer, long i) {
  std::memset(buffer, static_cast<int>(i), kBuffer);
  unsigned char* events = buffer + (2 * kPage);
  std::memcpy(buffer, &events, sizeof(events));
}

// ns per call of `calls` calls, the buffer written before each by this thread (remote: by a
// thread on CPU 1, which hands each write over before the call; cold: by this thread, which
// then reads a line of every 64 bytes of `sweep`).
double run_calls(long calls, Mode mode, unsigned char* buffer,
                 const std::vector<unsigned char>& sweep) {
  pin(0);
  std::atomic<long> written{-1};   // the writer's last write
  std::atomic<long> consumed{-1};  // the caller's last call
  std::thread writer;
  const bool remote = mode == Mode::remote;
  if (remote) {
    writer = std::thread([&] {
      pin(1);
      for (long i = 0; i < calls; ++i) {
        while (consumed.load(std::memory_order_acquire) != i - 1) {
        }
        fill(buffer, i);
        written.store(i, std::memory_order_release);
      }
    });
  }
  long sink = 0;
  double swept_ns = 0;
  const auto t0 = Clock::now();
  for (long i = 0; i < calls; ++i) {
    if (remote) {
      while (written.load(std::memory_order_acquire) != i) {
      }
    } else {
      fill(buffer, i);
    }
    if (mode == Mode::cold) {
      const auto s0 = Clock::now();
      for (std::size_t at = 0; at < sweep.size(); at += kLine) {
        sink += *static_cast<const volatile unsigned char*>(&sweep[at]);
      }
      swept_ns += std::chrono::duration<double, std::nano>(Clock::now() - s0).count();
    }
    sink += cephscope_floor_probed(buffer);
    consumed.store(i, std::memory_order_release);
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() - swept_ns;
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
  const long cold_mib = argc > 3 ? std::atol(argv[3]) : 64;
  const long cold_calls = std::max(1000L, calls / 100);
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
  const __u32 slot = 0;
  const __u32 present = 1;
  bpf_map__update_elem(skel->maps.layouts, &slot, sizeof(slot), &present, sizeof(present), BPF_ANY);

  const std::vector<std::pair<std::string, bpf_program*>> pieces = {
      {"empty program", skel->progs.empty},
      {"read 8 B", skel->progs.read_8},
      {"read 64 B", skel->progs.read_64},
      {"read 512 B", skel->progs.read_512},
      {"read 1 KiB", skel->progs.read_1024},
      {"read 2 KiB", skel->progs.read_2048},
      {"16 reads of 8 B", skel->progs.reads_16x8},
      {"4 reads of 8 B, 4 pages", skel->progs.reads_4_pages},
      {"tier 1's least at an op", skel->progs.op_minimum},
      {"... scratch's map counts", skel->progs.op_minimum_one_map},
      {"per-CPU array update", skel->progs.percpu_update},
      {"hash lookup", skel->progs.hash_lookup},
  };
  std::vector<unsigned char> buffer(kBuffer);
  std::vector<unsigned char> sweep(static_cast<std::size_t>(cold_mib) << 20, 1);
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "cephscope_floor_probed");
  constexpr std::size_t kModes = kModeNames.size();
  std::map<std::string, std::vector<double>> bpf_ns[kModes];
  std::map<std::string, std::vector<double>> wall_ns[kModes];
  std::vector<double> bare[kModes];
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t m = 0; m < kModes; ++m) {
      const auto mode = static_cast<Mode>(m);
      const long n = mode == Mode::cold ? cold_calls : calls;
      bare[m].push_back(run_calls(n, mode, buffer.data(), sweep));
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
        const double wall = run_calls(n, mode, buffer.data(), sweep);
        const RunStats after = run_stats(prog);
        bpf_link__destroy(link);
        const __u64 hits = after.count - before.count;
        bpf_ns[m][name].push_back(
            hits == 0 ? 0 : static_cast<double>(after.ns - before.ns) / static_cast<double>(hits));
        wall_ns[m][name].push_back(wall);
      }
    }
  }
  close(stats_fd);

  std::printf(
      "uprobe hit prices on this host: %ld calls per piece and round (cold: %ld, after a sweep "
      "of %ld MiB), median of %d rounds\n",
      calls, cold_calls, cold_mib, rounds);
  std::printf("%-27s %11s %11s %11s %11s %11s %11s\n", "piece", "BPF local", "BPF remote",
              "BPF cold", "wall local", "wall remote", "wall cold");
  std::printf("%-27s %11s %11s %11s %11.0f %11.0f %11.0f\n", "no probe", "-", "-", "-",
              median(bare[0]), median(bare[1]), median(bare[2]));
  for (const auto& [name, prog] : pieces) {
    std::printf("%-27s %11.0f %11.0f %11.0f %11.0f %11.0f %11.0f\n", name.c_str(),
                median(bpf_ns[0][name]), median(bpf_ns[1][name]), median(bpf_ns[2][name]),
                median(wall_ns[0][name]), median(wall_ns[1][name]), median(wall_ns[2][name]));
  }
  // the trap: what a hit adds to a call beyond the program's own run time
  for (std::size_t m = 0; m < kModes; ++m) {
    const std::string name = "empty program";
    std::printf(
        "trap alone (%s): %.0f ns (wall with the empty program, less the call without "
        "a probe and the program's run time)\n",
        kModeNames[m], median(wall_ns[m][name]) - median(bare[m]) - median(bpf_ns[m][name]));
  }
  uprobe_floor_bpf__destroy(skel);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "uprobe_floor: %s\n", e.what());
  return 1;
}
