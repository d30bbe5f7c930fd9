// cephscope-resolver: resolves one probe set against one binary and prints the profile.
//
//   cephscope-resolver --binary PATH [--target-root DIR] [--debug-file PATH] [--object NAME]
//                      [--host-root DIR] [--debug-dir DIR] [--no-debuginfod] [--no-inlined]
//                      < probe-set.json   > profile.json
//
// The daemon and `cephscope profile generate` run it as a child with no capabilities, an
// address-space limit and a timeout (profile/resolver_process.h); the DWARF it parses may come
// from a container. stderr carries progress and, on a line of its own, "debuginfo-source S".
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#include "core/unique_fd.h"
#include "profile/probe_set.h"
#include "profile/profile_json.h"
#include "resolver/debuginfo.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"

namespace {

using namespace cephscope;
using namespace cephscope::profile;

constexpr std::size_t kMaxSpecBytes = 1 << 20;

struct Options {
  std::string binary;
  std::string target_root;
  std::string debug_file;
  std::string object;
  std::string host_root = "/";
  std::string debug_dir = "/usr/lib/debug";
  bool no_debuginfod = false;
  bool no_inlined = false;
  std::uint64_t max_debug_bytes = kDefaultMaxInflatedBytes;
};

Result<ProbeSet> read_spec() {
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int err = errno;
      return errno_error("stdin", err);
    }
    if (n == 0) {
      return parse_probe_set(text);
    }
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxSpecBytes) {
      return make_error(ErrorKind::kInvalidInput, "probe set on stdin over 1 MiB");
    }
  }
}

Result<Profile> resolve(const Options& o, std::string& debug_source) {
  const auto t0 = std::chrono::steady_clock::now();
  auto set = read_spec();
  if (!set.ok()) {
    return make_error(set.error().kind, "probe set: " + set.error().message);
  }
  // Inside a target's root (its mount namespace) every file is opened inside the root: its
  // symlinks cannot lead to the host's files (core/safe_file.h).
  UniqueFd root;
  if (!o.target_root.empty()) {
    root.reset(::open(o.target_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) {
      const int err = errno;
      return errno_error(o.target_root, err);
    }
  }
  auto binary = root.valid() ? ElfFile::open_in(root.get(), o.target_root, o.binary)
                             : ElfFile::open(o.binary);
  if (!binary.ok()) {
    return binary.error();
  }
  auto build_id = binary->build_id();
  if (!build_id.ok()) {
    return build_id.error();
  }
  DebugSearch search;
  search.explicit_file = o.debug_file;
  search.target_root = o.target_root;
  search.target_root_fd = root.get();
  search.host_root = o.host_root;
  search.debug_dir = o.debug_dir;
  search.debuginfod = !o.no_debuginfod;
  // Markers alone live in the binary itself: no debug file is looked for.
  const bool markers_only = set->functions.empty() && set->types.empty();
  auto ref = markers_only ? Result<DebugFileRef>(make_error(ErrorKind::kNotFound, "markers only"))
                          : find_debuginfo(*binary, *build_id, o.binary, search);
  std::optional<DwarfFile> dwarf;
  std::string no_dwarf_reason;
  if (ref.ok()) {
    DwarfOpenOptions dopts;
    dopts.max_inflated_bytes = o.max_debug_bytes;
    dopts.root_fd = root.get();
    dopts.root_name = o.target_root;
    auto d = [&]() -> Result<DwarfFile> {
      if (ref->in_root.empty()) {
        return DwarfFile::open(ref->path, dopts);
      }
      auto f = ElfFile::open_in(root.get(), o.target_root, ref->in_root);
      if (!f.ok()) {
        return f.error();
      }
      return DwarfFile::open(std::move(f).value(), dopts);
    }();
    if (d.ok()) {
      dwarf.emplace(std::move(d).value());
      debug_source = std::string(to_string(ref->source));
    } else if (!o.debug_file.empty()) {
      return d.error();
    } else {
      // Unreadable or refused debuginfo (corrupt, over the cap, from a container): function
      // offsets still work, and every member says why it has none.
      spdlog::warn("{}: {}; offsets from the symbol table only", o.binary, d.error().message);
      no_dwarf_reason = d.error().message;
    }
  } else if (!o.debug_file.empty()) {
    return ref.error();
  } else {
    spdlog::info("{}: {}; offsets from the symbol table only", o.binary, ref.error().message);
  }
  ResolveOptions ro;
  ro.object = o.object.empty() ? std::filesystem::path(o.binary).filename().string() : o.object;
  ro.inlined = !o.no_inlined;
  ro.no_dwarf_reason = no_dwarf_reason;
  ResolveStats stats;
  auto p = resolve_profile(*binary, dwarf ? &*dwarf : nullptr, *set, ro, &stats);
  if (p.ok()) {
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spdlog::info(
        "{}: {} profile in {:.3f} s (resolve {:.3f} s, {} units, {} DIEs, {} symbols, "
        "{} demangled) from {}",
        o.binary, p->source, total, stats.seconds, stats.units_scanned, stats.dies_visited,
        stats.symbols, stats.demangled, ref.ok() && dwarf ? ref->path : "the symbol table");
  }
  return p;
}

int run(int argc, char** argv) {
  // Started by hand or by the daemon: either way it must not outlive its parent.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    std::perror("PR_SET_PDEATHSIG");
    return 1;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("cephscope-resolver"));
  spdlog::set_pattern("%l: %v");
  CLI::App app{
      "cephscope-resolver: a probe set (stdin) resolved against a binary (profile on "
      "stdout)"};
  Options o;
  app.add_option("--binary", o.binary, "The binary uprobes attach to (inside --target-root)")
      ->required();
  app.add_option("--target-root", o.target_root, "The target's root directory");
  app.add_option("--debug-file", o.debug_file, "Its DWARF (default: searched)");
  app.add_option("--object", o.object, "Object name to record (default: file name)");
  app.add_option("--host-root", o.host_root, "Root of the host's debug files")
      ->capture_default_str();
  app.add_option("--debug-dir", o.debug_dir, "Debug directory in each root")->capture_default_str();
  app.add_flag("--no-debuginfod", o.no_debuginfod, "Never ask debuginfod");
  app.add_flag("--no-inlined", o.no_inlined, "Do not list inlined instances");
  app.add_option("--max-debug-bytes", o.max_debug_bytes,
                 "Refuse a debug file whose sections inflate to more than this")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::string debug_source;
  auto p = resolve(o, debug_source);
  if (!p.ok()) {
    std::fprintf(stderr, "%s\n", p.error().message.c_str());
    return 1;
  }
  if (!debug_source.empty()) {
    std::fprintf(stderr, "debuginfo-source %s\n", debug_source.c_str());
  }
  const std::string text = dump_profile(*p);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::perror("stdout");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything expected to fail is a Result; what is thrown is fatal and ends here, as the
  // last line of stderr, which the daemon reports.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {  // the address-space limit
    std::fprintf(stderr, "out of memory (address-space limit)\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cephscope-resolver: %s\n", e.what());
    return 1;
  }
}
