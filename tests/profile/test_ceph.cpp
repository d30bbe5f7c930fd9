// e2e (root, Debian's Ceph 16.2.15 with ceph-osd-dbg, librados2-dbg, ceph-common-dbg): the
// shipped probe sets resolve against the real binaries; every function offset agrees with the
// debug file's symbol table as nm prints it, converted with readelf's program headers; the
// layouts agree with the ones measured on 16.2.15. Timings are printed, never asserted.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "collectors/osd/osd_call_site.h"
#include "collectors/osd/osd_probes.h"
#include "collectors/rados/rados_probes.h"
#include "fixture_util.h"
#include "profile/profile_json.h"
#include "profile/resolver_process.h"
#include "resolver/debuginfo.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"

using namespace cephscope::profile;
using cephscope::osd::third_state_call;
namespace fs = std::filesystem;

namespace {

const char* const kOsd = "/usr/bin/ceph-osd";
const char* const kRados = "/usr/lib/x86_64-linux-gnu/librados.so.2";
const char* const kCommon = "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2";

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// mangled name -> address, from `nm` on the debug file (the independent view).
std::map<std::string, uint64_t> nm_symbols(const std::string& debug_file) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(test::run("nm --defined-only " + debug_file));
  std::string addr;
  std::string type;
  std::string name;
  while (in >> addr >> type >> name) {
    if (type == "t" || type == "T" || type == "W" || type == "w" || type == "i") {
      out.emplace(name, std::stoull(addr, nullptr, 16));
    }
  }
  return out;
}

struct Load {
  uint64_t offset;
  uint64_t vaddr;
  uint64_t filesz;
};

// PT_LOAD segments from `readelf -lW` on the binary.
std::vector<Load> readelf_loads(const std::string& binary) {
  std::vector<Load> out;
  std::istringstream in(test::run("readelf -lW " + binary));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string kind;
    std::string off;
    std::string vaddr;
    std::string paddr;
    std::string filesz;
    if (l >> kind >> off >> vaddr >> paddr >> filesz && kind == "LOAD") {
      out.push_back({std::stoull(off, nullptr, 16), std::stoull(vaddr, nullptr, 16),
                     std::stoull(filesz, nullptr, 16)});
    }
  }
  return out;
}

uint64_t to_offset(const std::vector<Load>& loads, uint64_t vaddr) {
  for (const Load& l : loads) {
    if (vaddr >= l.vaddr && vaddr < l.vaddr + l.filesz) {
      return vaddr - l.vaddr + l.offset;
    }
  }
  return ~uint64_t{0};
}

struct Resolved {
  Profile profile;
  std::string debug_file;
};

// A wide spec of ceph-osd layouts (more than the collector reads): the resolver's oracle.
ProbeSet layouts_spec() {
  auto set = load_probe_set(std::string(FIXTURE_DIR) + "/ceph-osd-layouts.json");
  REQUIRE(set.ok());
  return std::move(set).value();
}

Resolved resolve(const std::string& binary_path, const ProbeSet& set) {
  auto binary = ElfFile::open(binary_path);
  INFO(binary_path);
  REQUIRE(binary.ok());
  auto id = binary->build_id();
  REQUIRE(id.ok());
  auto ref = find_debuginfo(*binary, *id, binary_path, DebugSearch{});
  INFO("the -dbg packages (tests/ceph/install.sh): " << (ref.ok() ? "" : ref.error().message));
  REQUIRE(ref.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto dwarf = DwarfFile::open(ref->path);
  REQUIRE(dwarf.ok());
  const double open_s = since(t0);
  ResolveStats stats;
  auto p = resolve_profile(*binary, &*dwarf, set, {}, &stats);
  REQUIRE(p.ok());
  std::printf("%s: cold resolve %.2f s (open+inflate %.2f s, %zu units, %zu DIEs)\n",
              binary_path.c_str(), since(t0), open_s, stats.units_scanned, stats.dies_visited);
  return Resolved{std::move(p).value(), ref->path};
}

// Every out-of-line instance: its symbol is in nm's list at its vaddr, and its file offset is
// what readelf's program headers give.
void check_against_nm(const std::string& binary, const Resolved& r) {
  const auto syms = nm_symbols(r.debug_file);
  const auto loads = readelf_loads(binary);
  REQUIRE_FALSE(syms.empty());
  REQUIRE_FALSE(loads.empty());
  for (const FunctionEntry& f : r.profile.functions) {
    for (const FunctionInstance& i : f.instances) {
      INFO(f.name << " " << i.symbol);
      CHECK(i.file_offset == to_offset(loads, i.vaddr));
      if (i.inlined) {
        continue;
      }
      auto s = syms.find(i.symbol);
      REQUIRE(s != syms.end());
      CHECK(s->second == i.vaddr);
    }
  }
}

uint64_t member(const Profile& p, const std::string& type, const std::string& path) {
  const MemberEntry* m = p.member(type, path);
  REQUIRE(m != nullptr);
  INFO(type << "." << path << ": " << m->message);
  REQUIRE(m->status == ItemStatus::kOk);
  return m->offset;
}

}  // namespace

TEST_CASE("the OSD collector's table resolves whole, in the resolver process", "[e2e]") {
  ResolveRequest req;
  req.binary = kOsd;
  req.set = cephscope::osd::probe_set();
  ResolverLimits limits;
  limits.executable = RESOLVER_BIN;
  auto r = run_resolver(req, limits);
  INFO((r.ok() ? "" : r.error().message));
  REQUIRE(r.ok());
  std::printf("%s: resolver process %.1f s, peak RSS %ju MiB, debuginfo %s\n", kOsd, r->seconds,
              static_cast<uintmax_t>(r->peak_rss_kib / 1024), r->debug_source.c_str());
  const Profile& p = r->profile;
  CHECK(p.source == "dwarf");
  CHECK(p.probe_set_digest == req.set.digest);
  for (const FunctionEntry& f : p.functions) {
    INFO(f.name << ": " << f.message);
    CHECK(f.status == ItemStatus::kOk);
  }
  REQUIRE(p.members.size() == cephscope::osd::kMembers.size());
  for (const MemberEntry& m : p.members) {
    INFO(m.type << "." << m.path << ": " << m.message);
    CHECK(m.status == ItemStatus::kOk);
  }
}

TEST_CASE("ceph-osd layouts against Debian's ceph-osd 16.2.15", "[e2e]") {
  const Resolved r = resolve(kOsd, layouts_spec());
  const Profile& p = r.profile;
  for (const FunctionEntry& f : p.functions) {
    INFO(f.name << ": " << f.message);
    CHECK((f.status == ItemStatus::kOk || f.status == ItemStatus::kInlinedOnly));
    size_t inlined = 0;
    for (const auto& i : f.instances) {
      inlined += i.inlined ? 1 : 0;
    }
    std::printf("  %-40s %-12s %zu out-of-line, %zu inlined\n", f.name.c_str(),
                std::string(to_string(f.status)).c_str(), f.instances.size() - inlined, inlined);
  }
  check_against_nm(kOsd, r);
  // Layouts measured on 16.2.15.
  CHECK(p.type("OpRequest")->size == 360);
  CHECK(p.type("TrackedOp")->size == 192);
  CHECK(member(p, "OpRequest", "request") == 224);
  CHECK(member(p, "OpRequest", "reqid.name._type") == 232);
  CHECK(member(p, "OpRequest", "reqid.name._num") == 240);
  CHECK(member(p, "OpRequest", "reqid.tid") == 248);
  CHECK(p.type("BlueStore::TransContext")->size == 784);
  CHECK(member(p, "BlueStore::TransContext", "osr") == 16);
  CHECK(member(p, "BlueStore::TransContext", "start") == 744);
  CHECK(member(p, "BlueStore::TransContext", "state") == 776);
  for (const MemberEntry& m : p.members) {
    INFO(m.type << "." << m.path << ": " << m.message);
    CHECK(m.status == ItemStatus::kOk);
  }

  // The symbol-table fallback (.dynsym of the stripped binary) finds the same entries.
  auto binary = ElfFile::open(kOsd);
  auto symtab = resolve_profile(*binary, nullptr, layouts_spec());
  REQUIRE(symtab.ok());
  for (const FunctionEntry& f : p.functions) {
    const FunctionEntry* s = symtab->function(f.name);
    REQUIRE(s != nullptr);
    for (const FunctionInstance& i : f.instances) {
      if (i.inlined || i.symbol.empty() || i.clone) {
        continue;
      }
      INFO(f.name << " " << i.symbol);
      CHECK(std::any_of(s->instances.begin(), s->instances.end(),
                        [&](const FunctionInstance& x) { return x.vaddr == i.vaddr; }));
    }
  }

  // Warm: the same profile from a file.
  test::TempDir dir;
  REQUIRE(save_profile(dir / "osd.json", p).ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto warm = load_profile(dir / "osd.json", p.build_id);
  REQUIRE(warm.ok());
  std::printf("%s: warm load %.1f ms, profile %ju bytes\n", kOsd, since(t0) * 1e3,
              static_cast<uintmax_t>(fs::file_size(dir / "osd.json")));
}

// The call logging io_done in BlueStore::_txc_state_proc (the OSD collector's P5 probe): the
// resolver records the same call objdump's disassembly shows after `mov $ID,%ecx`.
TEST_CASE("the BlueStore io_done call site agrees with objdump", "[e2e]") {
  const std::string proc = "_ZN9BlueStore15_txc_state_procEPNS_12TransContextE";
  const std::string log =
      "_ZN9BlueStore17BlueStoreThrottle17log_state_latencyERNS_12TransContextEPN4ceph6common12"
      "PerfCountersEi";
  std::map<std::string, std::pair<uint64_t, uint64_t>> syms;  // name -> vaddr, size
  std::istringstream nm(test::run(std::string("nm -D -S --defined-only ") + kOsd));
  for (std::string line; std::getline(nm, line);) {
    std::istringstream l(line);
    std::string addr, size, type, name;
    if (l >> addr >> size >> type >> name && (name == proc || name == log)) {
      syms[name] = {std::stoull(addr, nullptr, 16), std::stoull(size, nullptr, 16)};
    }
  }
  REQUIRE(syms.size() == 2);
  const auto [vaddr, size] = syms[proc];

  // objdump: each call to log_state_latency with the last `mov $imm,%ecx` before it
  std::map<uint32_t, std::vector<uint64_t>> by_id;
  std::ostringstream cmd;
  cmd << "objdump -d --no-show-raw-insn --start-address=0x" << std::hex << vaddr
      << " --stop-address=0x" << vaddr + size << " " << kOsd;
  std::istringstream dis(test::run(cmd.str()));
  int64_t ecx = -1;      // none seen since the last call
  std::string rsi_from;  // the register of the last `mov %REG,%rsi`
  std::map<uint64_t, std::string> rsi_at_call;
  std::ostringstream call_to;
  call_to << "call   " << std::hex << syms[log].first << " ";
  for (std::string line; std::getline(dis, line);) {
    const auto mov = line.find("mov    $0x");
    const auto copy = line.find("mov    %");
    if (mov != std::string::npos && line.ends_with(",%ecx")) {
      ecx = static_cast<int64_t>(std::stoul(line.substr(mov + 8), nullptr, 16));
    } else if (copy != std::string::npos && line.ends_with(",%rsi")) {
      rsi_from = line.substr(copy + 8, line.size() - 5 - (copy + 8));
    } else if (line.find(call_to.str()) != std::string::npos && ecx >= 0) {
      const uint64_t at = std::stoull(line.substr(0, line.find(':')), nullptr, 16);
      by_id[static_cast<uint32_t>(ecx)].push_back(at);
      rsi_at_call[at] = rsi_from;
      ecx = -1;
      rsi_from.clear();
    }
  }
  REQUIRE(by_id.size() >= 3);
  const uint32_t first = by_id.begin()->first;
  REQUIRE(by_id[first + 2].size() == 1);

  // the resolver's calls of log_state_latency in the OSD probe set's profile
  const Resolved r = resolve(kOsd, cephscope::osd::probe_set());
  const CallSiteEntry* recorded = r.profile.calls(
      "BlueStore::_txc_state_proc", "BlueStore::BlueStoreThrottle::log_state_latency");
  REQUIRE(recorded != nullptr);
  INFO(recorded->message);
  REQUIRE(recorded->status == ItemStatus::kOk);
  const auto& calls = recorded->sites;
  auto site = third_state_call(calls);
  INFO((site.ok() ? "" : site.error().message));
  REQUIRE(site.ok());
  std::printf("io_done call: 0x%llx (id %u), %zu logged calls in _txc_state_proc\n",
              static_cast<unsigned long long>(site->vaddr), first + 2, calls.size());
  CHECK(site->vaddr == by_id[first + 2].front());
  CHECK(site->ecx == first + 2);
  // the probe goes on the return address: the transaction stays in the register rsi came from
  std::printf("io_done call: the transaction in %%%s (objdump: %%%s)\n",
              site->rsi_saved_in.value_or("none").c_str(), rsi_at_call[site->vaddr].c_str());
  CHECK(site->rsi_saved_in == rsi_at_call[site->vaddr]);
  CHECK(site->file_offset == to_offset(readelf_loads(kOsd), site->vaddr));
}

TEST_CASE("librados probe table against librados.so.2 and libceph-common.so.2", "[e2e]") {
  for (const char* lib : {kRados, kCommon}) {
    DYNAMIC_SECTION(lib) {
      const Resolved r = resolve(lib, cephscope::rados::probe_set());
      const Profile& p = r.profile;
      for (const FunctionEntry& f : p.functions) {
        INFO(f.name << ": " << f.message);
        CHECK((f.status == ItemStatus::kOk || f.status == ItemStatus::kInlinedOnly));
      }
      check_against_nm(lib, r);
      CHECK(p.type("Objecter::Op")->size == 1248);
      CHECK(member(p, "Objecter::Op", "tid") == 1144);
      // what the rados collector reads (daemon/collectors/rados/rados_probes.h)
      CHECK(member(p, "Objecter::Op", "attempts") == 1152);
      CHECK(member(p, "Objecter::Op", "ops.m_holder.m_size") ==
            member(p, "Objecter::Op", "ops.m_holder.m_start") + 8);
      CHECK(member(p, "OSDOp", "op.extent.length") == 14);
      CHECK(p.type("OSDOp")->size == 152);
      CHECK(member(p, "MOSDOpReply", "result") == 400);
    }
  }
}
