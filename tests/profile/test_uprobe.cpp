// Root only (root_main.cpp skips otherwise): a uprobe at a resolved offset of the fixture fires
// once per call, at the function's first instruction (the arguments are where the SysV ABI
// puts them: registers and the stack), and at a resolved call site once per call. Both builds.
#include <bpf/libbpf.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "fixture_util.h"
#include "profile/probe_set.h"
#include "profile_uprobe.skel.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"
#include "uprobe_arg.h"

using namespace cephscope::profile;

namespace {

constexpr long kCalls = 7;

// libbpf attaches through the uprobe PMU, or through tracefs when there is none.
void ensure_tracefs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists("/sys/bus/event_source/devices/uprobe/type", ec) &&
      (!fs::exists("/sys/kernel/tracing/events", ec) ||
       fs::is_empty("/sys/kernel/tracing/events", ec))) {
    ::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr);
  }
}

struct SkelDeleter {
  void operator()(profile_uprobe_bpf* s) const { profile_uprobe_bpf__destroy(s); }
};
struct LinkDeleter {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};

struct Outcome {
  uint64_t hits = 0;
  uint64_t sum = 0;
};

// Where an integer argument is at a function's first instruction (SysV ABI, DWARF numbers).
struct ArgAt {
  int kind = ARG_REGISTER;
  int dwarf_reg = 0;
  long offset = 0;  // ARG_MEMORY: from the register
};
constexpr int kRdi = 5;
constexpr int kRsi = 4;
constexpr int kRdx = 1;
constexpr int kRsp = 7;

// Attaches at OFFSET of BINARY for one child running `BINARY call kCalls`, reading ARG.
Outcome probe_child(const std::string& binary, uint64_t offset, const ArgAt& arg) {
  std::unique_ptr<profile_uprobe_bpf, SkelDeleter> skel(profile_uprobe_bpf__open());
  REQUIRE(skel);
  skel->rodata->arg_kind = arg.kind;
  skel->rodata->arg_reg = arg.dwarf_reg;
  skel->rodata->arg_offset = arg.offset;
  REQUIRE(profile_uprobe_bpf__load(skel.get()) == 0);

  // The child waits on a pipe so the probe is attached (for its pid only) before it runs.
  int go[2];
  REQUIRE(::pipe(go) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 1) {
      ::_exit(126);
    }
    std::freopen("/dev/null", "w", stdout);
    const std::string n = std::to_string(kCalls);
    ::execl(binary.c_str(), binary.c_str(), "call", n.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(go[0]);
  std::unique_ptr<bpf_link, LinkDeleter> link(bpf_program__attach_uprobe(
      skel->progs.on_entry, false, pid, binary.c_str(), static_cast<size_t>(offset)));
  const bool attached = link != nullptr;
  REQUIRE(::write(go[1], "g", 1) == 1);
  ::close(go[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(attached);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return {skel->bss->hits, skel->bss->sum};
}

const FunctionInstance& instance(const Profile& p, const std::string& name,
                                 const std::string& linkage) {
  const FunctionEntry* f = p.function(name);
  REQUIRE(f != nullptr);
  for (const auto& i : f->instances) {
    if (!i.inlined && i.linkage_name == linkage) {
      return i;
    }
  }
  FAIL("no out-of-line " << linkage);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("uprobes at resolved offsets fire at entry and at call sites", "[kernel]") {
  ensure_tracefs();  // root is checked by root_main.cpp
  for (const char* binary : {FIXTURE_O0, FIXTURE_O2}) {
    DYNAMIC_SECTION(std::filesystem::path(binary).filename().string()) {
      auto elf = ElfFile::open(binary);
      auto dwarf = DwarfFile::open(binary);
      auto set = load_probe_set(FIXTURE_PROBE_SET);
      REQUIRE((elf.ok() && dwarf.ok() && set.ok()));
      auto p = resolve_profile(*elf, &*dwarf, *set);
      REQUIRE(p.ok());

      // Derived::scale(long factor) is called with 1000 + i: factor in rsi at entry.
      const FunctionInstance& scale = instance(*p, "fx::Derived::scale", "_ZN2fx7Derived5scaleEl");
      Outcome o = probe_child(binary, entry_offset(scale), {ARG_REGISTER, kRsi});
      CHECK(o.hits == kCalls);
      CHECK(o.sum == kCalls * 1000 + kCalls * (kCalls - 1) / 2);

      // sum8's 7th and 8th arguments (700 + i, 800 + i) are on the stack, above the return
      // address; its third (3) in rdx.
      const FunctionInstance& sum8 = instance(*p, "fx::sum8", "_ZN2fx4sum8Ellllllll");
      o = probe_child(binary, entry_offset(sum8), {ARG_MEMORY, kRsp, 16});
      CHECK(o.hits == kCalls);
      CHECK(o.sum == kCalls * 800 + kCalls * (kCalls - 1) / 2);
      o = probe_child(binary, entry_offset(sum8), {ARG_MEMORY, kRsp, 8});
      CHECK(o.sum == kCalls * 700 + kCalls * (kCalls - 1) / 2);
      o = probe_child(binary, entry_offset(sum8), {ARG_REGISTER, kRdx});
      CHECK(o.sum == kCalls * 3);

      // Each call of twice in mix (mix runs once per round): the call site fires as often, with
      // `this` in rdi for the call. At -O2 GCC may inline twice: no call then.
      const CallSiteEntry* calls = p->calls("fx::Derived::mix", "fx::Derived::twice");
      REQUIRE(calls != nullptr);
      for (const CallSite& c : calls->sites) {
        o = probe_child(binary, c.file_offset, {ARG_REGISTER, kRdi});
        CHECK(o.hits == kCalls);
        CHECK(o.sum != 0);
      }
      std::printf("%s: %zu call sites of twice in mix probed\n", binary, calls->sites.size());
    }
  }
}
