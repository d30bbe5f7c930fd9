#include "app/usdt_check.h"

#include <fmt/format.h>

#include <unistd.h>

#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/bpf_collector.h"
#include "profile/store.h"

namespace cephscope {
namespace {

// Where the dynamic loader of a Debian host finds libraries.
constexpr std::array<const char*, 4> kLibraryDirs = {
    "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"};

std::string host_file(const UsdtRule& rule) {
  if (rule.binary.front() == '/') {
    return rule.binary;
  }
  for (const char* dir : kLibraryDirs) {
    std::string path = std::string(dir) + "/" + rule.binary;
    if (access(path.c_str(), R_OK) == 0) {
      return path;
    }
  }
  return "";
}

}  // namespace

void check_usdt(const Config& config, std::ostream& out) {
  if (config.usdt.empty()) {
    return;
  }
  profile::StoreOptions options = store_options(config.profiles);
  options.write_cache = false;  // a check leaves no files behind
  profile::ProfileStore store(options);
  for (const auto& rule : config.usdt) {
    out << "usdt rule=" << rule.name() << " binary=" << rule.binary;
    const std::string path = host_file(rule);
    if (path.empty()) {
      out << " status=not_on_host detail=\"no " << rule.binary
          << " in this host's library directories; each target's own is looked up at "
             "attach\"\n";
      continue;
    }
    if (path != rule.binary) {
      out << " host_file=" << path;
    }
    const std::string file = path.substr(path.rfind('/') + 1);
    auto loaded = store.for_binary(path, profile::markers_probe_set(file));
    if (!loaded.ok()) {
      out << " status=unavailable reason=profile_unavailable detail=\"" << loaded.error().message
          << "\"\n";
      continue;
    }
    std::vector<std::tuple<std::string, unsigned>> wanted;
    if (rule.span.empty()) {
      wanted.emplace_back(rule.probe, 0);
    } else {
      wanted.emplace_back(rule.start, rule.key);
      wanted.emplace_back(rule.end, rule.key);
    }
    std::string problem;
    std::string reason = "symbol_not_found";
    std::string sites;
    for (const auto& [probe, key] : wanted) {
      const auto found = profile::marker_sites(loaded->profile.markers, rule.provider, probe);
      if (found.empty()) {
        problem = fmt::format("no marker {}:{} in {} (build-id {})", rule.provider, probe, path,
                              loaded->profile.build_id);
        break;
      }
      sites += (sites.empty() ? "" : ",") + probe + ":" + std::to_string(found.size());
      sites += found.front()->semaphore_offset != 0 ? "+semaphore" : "";
      for (const auto* m : found) {
        if (key > 0 && (!m->args_error.empty() || key > m->args.size())) {
          reason = "members_missing";
          problem = rule.provider + ":" + probe + " argument " + std::to_string(key) +
                    " cannot be read (" +
                    (m->args_error.empty()
                         ? "the marker has " + std::to_string(m->args.size()) + " arguments"
                         : m->args_error) +
                    ")";
        }
      }
    }
    if (!problem.empty()) {
      out << " status=unavailable reason=" << reason << " detail=\"" << problem << "\"\n";
      continue;
    }
    out << " status=ok sites=" << sites << "\n";
  }
}

}  // namespace cephscope
