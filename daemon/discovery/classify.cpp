#include "discovery/classify.h"

#include <charconv>
#include <filesystem>
#include <regex>
#include <sstream>

#include "core/label_value.h"

namespace cephscope {
namespace {

const std::vector<std::string> kRadosLibraries = {"librados.so.2", "libceph-common.so.2"};

std::optional<unsigned> parse_id(std::string_view text) {
  unsigned id = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (ec != std::errc{} || ptr != end || text.empty()) {
    return std::nullopt;
  }
  return id;
}

std::optional<unsigned> parse_osd_name(std::string_view text) {
  if (!text.starts_with("osd.")) {
    return std::nullopt;
  }
  return parse_id(text.substr(4));
}

// "fsid = UUID" in a ceph.conf, in [global] or before any section.
std::string fsid_from_conf(const std::string& conf) {
  static const std::regex kFsidLine(R"(^\s*fsid\s*=\s*([0-9a-fA-F-]{36})\s*$)");
  std::istringstream in(conf);
  std::string line;
  std::string section = "global";
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '[') {
      section = line.substr(first + 1, line.find(']') - first - 1);
      continue;
    }
    std::smatch m;
    if (section == "global" && std::regex_match(line, m, kFsidLine)) {
      return m[1].str();
    }
  }
  return "";
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) {
    s.pop_back();
  }
  return s;
}

}  // namespace

const char* to_string(TargetKind kind) {
  switch (kind) {
    case TargetKind::kCephOsd:
      return "ceph-osd";
    case TargetKind::kRadosClient:
      return "librados-client";
    case TargetKind::kMatched:
      return "matched";
  }
  return "unknown";
}

bool is_uuid(const std::string& text) {
  static const std::regex kUuid(
      "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
  return std::regex_match(text, kUuid);
}

OsdArgs parse_osd_args(const std::vector<std::string>& argv) {
  OsdArgs out;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    const bool has_next = i + 1 < argv.size();
    std::string_view value;
    std::string_view name = arg;
    bool inline_value = false;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      name = std::string_view(arg).substr(0, eq);
      value = std::string_view(arg).substr(eq + 1);
      inline_value = true;
    } else if (has_next) {
      value = argv[i + 1];
    }
    auto take = [&]() {
      if (!inline_value) {
        ++i;
      }
    };
    if (!inline_value && !has_next) {
      continue;
    }
    if (name == "--id" || name == "-i") {
      out.id = parse_id(value);
      take();
    } else if (name == "--name" || name == "-n") {
      out.id = parse_osd_name(value);
      take();
    } else if (name == "--cluster") {
      out.cluster = value;
      take();
    } else if (name == "--fsid") {
      out.fsid = value;
      take();
    } else if (name == "--conf" || name == "-c") {
      out.conf_path = value;
      take();
    } else if (name == "--osd-data" || name == "--osd_data") {
      out.osd_data = value;
      take();
    }
  }
  return out;
}

FsidLookup find_fsid(const ProcReader& proc, pid_t pid, const OsdArgs& args,
                     const CgroupFacts& cgroup) {
  FsidLookup out;
  if (is_uuid(args.fsid)) {
    out.fsid = args.fsid;
    return out;
  }
  if (!cgroup.unit_fsid.empty()) {
    out.fsid = cgroup.unit_fsid;
    return out;
  }
  auto note = [&](const Error& e) {
    if (e.reason != "not_found") {
      out.refusals.push_back(e);
    }
  };
  const std::string cluster = args.cluster.empty() ? "ceph" : args.cluster;
  std::vector<std::string> data_dirs;
  if (!args.osd_data.empty()) {
    data_dirs.push_back(args.osd_data);
  }
  if (args.id) {
    data_dirs.push_back("/var/lib/ceph/osd/" + cluster + "-" + std::to_string(*args.id));
  }
  for (const auto& dir : data_dirs) {
    auto text = proc.read_in_root(pid, dir + "/ceph_fsid", kMaxFsidFileBytes);
    if (!text.ok()) {
      note(text.error());
      continue;
    }
    if (auto fsid = trimmed(*text); is_uuid(fsid)) {
      out.fsid = fsid;
      return out;
    }
  }
  const std::string conf =
      args.conf_path.empty() ? "/etc/ceph/" + cluster + ".conf" : args.conf_path;
  auto text = proc.read_in_root(pid, conf, kMaxConfBytes);
  if (!text.ok()) {
    note(text.error());
    return out;
  }
  out.fsid = fsid_from_conf(*text);
  return out;
}

std::optional<TargetIdentity> Classifier::classify(const ProcessInfo& info) const {
  if (info.kernel_thread || info.state == 'Z' || info.exe.empty()) {
    return std::nullopt;
  }
  const std::string exe_name = std::filesystem::path(info.exe).filename().string();
  if (config_.ceph_osd && exe_name == "ceph-osd") {
    const OsdArgs args = parse_osd_args(info.argv);
    if (args.id) {
      TargetIdentity t;
      t.kind = TargetKind::kCephOsd;
      t.ceph_daemon = "osd." + std::to_string(*args.id);
      t.cluster = args.cluster;
      t.conf_path = args.conf_path;
      if (is_uuid(args.fsid)) {
        t.fsid = args.fsid;  // otherwise find_fsid(), off the daemon loop
      }
      return t;
    }
  }
  for (const auto& m : config_.matchers) {
    const bool exe_ok = !m.exe || std::regex_search(info.exe, *m.exe);
    const bool comm_ok = !m.comm || std::regex_search(info.comm, *m.comm);
    if (exe_ok && comm_ok) {
      TargetIdentity t;
      t.kind = TargetKind::kMatched;
      t.process = label_value(m.name.empty() ? info.comm : m.name);
      return t;
    }
  }
  if (config_.rados_clients && proc_.maps_library(info.pid, kRadosLibraries)) {
    TargetIdentity t;
    t.kind = TargetKind::kRadosClient;
    t.process = label_value(info.comm);
    return t;
  }
  return std::nullopt;
}

}  // namespace cephscope
