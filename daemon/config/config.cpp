#include "config/config.h"

#include "config/yaml_errors.h"
#include "core/label_value.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace cephscope {
namespace {

const std::set<std::string> kLogLevels = {"trace", "debug",    "info", "warn",
                                          "error", "critical", "off"};

using yaml::check_keys;
using yaml::line_of;
using yaml::Problem;
using yaml::read_if;
using yaml::require_map;
using yaml::scalar;

bool boolean(const YAML::Node& node, const std::string& key) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    throw Problem{line_of(node), key, "expected true or false, got '" + node.Scalar() + "'"};
  }
  return value;
}

std::size_t positive_count(const YAML::Node& node, const std::string& key) {
  const std::string text = scalar(node, key);
  std::size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != text.size() || text.empty() || text[0] == '-' || value == 0) {
    throw Problem{line_of(node), key, "expected a positive whole number, got '" + text + "'"};
  }
  return value;
}

std::chrono::milliseconds duration(const YAML::Node& node, const std::string& key) {
  const std::string text = scalar(node, key);
  auto value = parse_duration(text);
  if (!value || value->count() == 0) {
    throw Problem{line_of(node), key,
                  "expected a positive duration such as 500ms, 10s, 5m or 1h, got '" + text + "'"};
  }
  return *value;
}

// A slow-op threshold: a duration, or 0 (also "0s", "0ms") for none.
std::chrono::milliseconds threshold(const YAML::Node& node, const std::string& key) {
  const std::string text = scalar(node, key);
  auto value = text == "0" ? std::optional(std::chrono::milliseconds(0)) : parse_duration(text);
  if (!value) {
    throw Problem{
        line_of(node), key,
        "expected a duration such as 500ms, 10s, 5m or 1h, or 0 for none, got '" + text + "'"};
  }
  return *value;
}

// libstdc++'s regex compiler reads a back-reference or a repetition count into a long without
// an overflow check (`\5555555555555555555` is undefined behaviour there) and unrolls a count
// into that many copies: numbers after a backslash or inside braces are held to 3 digits.
std::optional<std::string> oversized_regex_number(const std::string& text) {
  bool in_braces = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool escaped_digit =
        c == '\\' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (c == '\\' && !escaped_digit) {
      ++i;  // an escaped character is never a brace
      continue;
    }
    if (c == '{') {
      in_braces = true;
    } else if (c == '}') {
      in_braces = false;
    }
    if (!escaped_digit && !(in_braces && std::isdigit(static_cast<unsigned char>(c)))) {
      continue;
    }
    const size_t start = escaped_digit ? i + 1 : i;
    size_t end = start;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) {
      ++end;
    }
    if (end - start > 3) {
      return text.substr(start, end - start);
    }
    i = end - 1;
  }
  return std::nullopt;
}

std::regex pattern(const YAML::Node& node, const std::string& key) {
  const std::string text = scalar(node, key);
  if (auto number = oversized_regex_number(text)) {
    throw Problem{line_of(node), key,
                  "invalid regular expression '" + text + "': the number " + *number +
                      " in a back-reference or repetition count has more than 3 digits"};
  }
  try {
    return std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Problem{line_of(node), key, "invalid regular expression '" + text + "': " + e.what()};
  }
}

// A scalar that must be one of `allowed` (`what` names it in the error: "hook", "buckets").
std::string one_of(const YAML::Node& node, const std::string& key, const std::string& what,
                   const std::vector<std::string>& allowed) {
  std::string value = scalar(node, key);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) {
      list += (list.empty() ? "" : ", ") + a;
    }
    throw Problem{line_of(node), key,
                  "unknown " + what + " '" + value + "' (one of: " + list + ")"};
  }
  return value;
}

// The names a setting takes and what each means: one table for parsing and for to_string.
constexpr std::array<std::pair<const char*, DetailMode>, 3> kDetailModes = {
    {{"never", DetailMode::kNever}, {"always", DetailMode::kAlways}, {"auto", DetailMode::kAuto}}};
constexpr std::array<std::pair<const char*, std::optional<Buckets>>, 4> kBucketSettings = {
    {{"auto", std::nullopt},
     {"full", Buckets::kFull},
     {"coarse", Buckets::kCoarse},
     {"none", Buckets::kNone}}};

// A scalar that must be one of the names in `table`: what that name means.
template <typename T, std::size_t N>
T choice(const YAML::Node& node, const std::string& key, const std::string& what,
         const std::array<std::pair<const char*, T>, N>& table) {
  std::vector<std::string> names;
  names.reserve(N);
  for (const auto& [name, value] : table) {
    names.emplace_back(name);
  }
  const std::string chosen = one_of(node, key, what, names);
  for (const auto& [name, value] : table) {
    if (chosen == name) {
      return value;
    }
  }
  return table.front().second;  // not reached: one_of accepts only the table's names
}

// A list of syscall names the collector can trace (config/syscall_names.h).
std::vector<std::string> syscall_list(const YAML::Node& node, const std::string& key) {
  if (!node.IsSequence() || node.size() == 0) {
    throw Problem{line_of(node), key, "expected a list of syscalls (or enabled: false for none)"};
  }
  const std::vector<std::string> known(kSyscallNames.begin(), kSyscallNames.end());
  std::vector<std::string> out;
  for (const auto& item : node) {
    std::string name = one_of(item, key, "syscall", known);
    if (std::find(out.begin(), out.end(), name) == out.end()) {
      out.push_back(std::move(name));
    }
  }
  return out;
}

CollectorConfig parse_collector(const YAML::Node& node, const std::string& key,
                                const std::set<std::string>& hooks,
                                const std::set<std::string>& extra_keys = {}) {
  require_map(node, key);
  std::set<std::string> keys = {"enabled", "hook"};
  keys.insert(extra_keys.begin(), extra_keys.end());
  check_keys(node, key, keys);
  CollectorConfig out;
  read_if(node, key, "enabled", out.enabled, boolean);
  if (node["hook"]) {
    std::vector<std::string> allowed = {"auto"};
    allowed.insert(allowed.end(), hooks.begin(), hooks.end());
    out.hook = one_of(node["hook"], key + ".hook", "hook", allowed);
  }
  if (node["buckets"]) {
    out.buckets = choice(node["buckets"], key + ".buckets", "buckets", kBucketSettings);
  }
  return out;
}

Matcher parse_matcher(const YAML::Node& node, const std::string& key) {
  require_map(node, key);
  check_keys(node, key, {"name", "exe", "comm"});
  Matcher m;
  read_if(node, key, "name", m.name, scalar);
  if (node["exe"]) {
    m.exe_pattern = scalar(node["exe"], key + ".exe");
    m.exe = pattern(node["exe"], key + ".exe");
  }
  if (node["comm"]) {
    m.comm_pattern = scalar(node["comm"], key + ".comm");
    m.comm = pattern(node["comm"], key + ".comm");
  }
  if (!m.exe && !m.comm) {
    throw Problem{line_of(node), key, "a matcher needs exe or comm"};
  }
  return m;
}

std::string absolute_path(const YAML::Node& node, const std::string& key);

// Where the container runtimes keep their records on the host (discovery/containers.h).
void parse_container_dirs(const YAML::Node& node, ContainerStateDirs& out) {
  const std::string key = "discovery.containers";
  require_map(node, key);
  check_keys(node, key, {"podman_storage", "docker_root", "kubelet_pod_logs"});
  read_if(node, key, "podman_storage", out.podman, absolute_path);
  read_if(node, key, "docker_root", out.docker, absolute_path);
  read_if(node, key, "kubelet_pod_logs", out.kubelet_pod_logs, absolute_path);
}

void parse_discovery(const YAML::Node& node, Config::Discovery& out) {
  const std::string key = "discovery";
  require_map(node, key);
  check_keys(
      node, key,
      {"scan_interval", "series_ttl", "ceph_osd", "rados_clients", "matchers", "containers"});
  if (node["containers"]) {
    parse_container_dirs(node["containers"], out.containers);
  }
  read_if(node, key, "scan_interval", out.scan_interval, duration);
  read_if(node, key, "series_ttl", out.series_ttl, duration);
  read_if(node, key, "ceph_osd", out.ceph_osd, boolean);
  read_if(node, key, "rados_clients", out.rados_clients, boolean);
  if (const auto& list = node["matchers"]) {
    if (!list.IsSequence()) {
      throw Problem{line_of(list), key + ".matchers", "expected a list"};
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      out.matchers.push_back(parse_matcher(list[i], key + ".matchers[" + std::to_string(i) + "]"));
    }
  }
}

std::string absolute_path(const YAML::Node& node, const std::string& key) {
  std::string path = scalar(node, key);
  if (path.empty() || path.front() != '/') {
    throw Problem{line_of(node), key, "expected an absolute path, got '" + path + "'"};
  }
  return path;
}

// A shipped directory: absolute, or relative to the config file's directory (config_dir; empty
// when the text came from no file), so that a build tree's daemon run with the repository's
// config/cephscope.yaml finds config/profiles beside it.
std::string shipped_dir(const YAML::Node& node, const std::string& key,
                        const std::string& config_dir) {
  std::string path = scalar(node, key);
  if (!path.empty() && path.front() == '/') {
    return path;
  }
  if (path.empty() || config_dir.empty()) {
    throw Problem{line_of(node), key,
                  "expected an absolute path, or one relative to the config file's "
                  "directory (this config was read from no file), got '" +
                      path + "'"};
  }
  return (std::filesystem::path(config_dir) / path).lexically_normal().string();
}

void parse_profiles(const YAML::Node& node, Config::Profiles& out, const std::string& config_dir) {
  require_map(node, "profiles");
  check_keys(node, "profiles",
             {"cache_dir", "shipped_dirs", "resolver", "resolve_timeout", "resolver_memory_mib"});
  read_if(node, "profiles", "cache_dir", out.cache_dir, absolute_path);
  if (const auto& dirs = node["shipped_dirs"]) {
    if (!dirs.IsSequence()) {
      throw Problem{line_of(dirs), "profiles.shipped_dirs", "expected a list of paths"};
    }
    out.shipped_dirs.clear();
    for (const auto& d : dirs) {
      out.shipped_dirs.push_back(shipped_dir(d, "profiles.shipped_dirs", config_dir));
    }
  }
  read_if(node, "profiles", "resolver", out.resolver, absolute_path);
  read_if(node, "profiles", "resolve_timeout", out.resolve_timeout, duration);
  if (node["resolver_memory_mib"]) {
    out.resolver_memory_mib =
        positive_count(node["resolver_memory_mib"], "profiles.resolver_memory_mib");
    if (out.resolver_memory_mib < 64) {
      throw Problem{line_of(node["resolver_memory_mib"]), "profiles.resolver_memory_mib",
                    "at least 64 MiB"};
    }
  }
}

bool is_marker_word(const std::string& s) {
  return !s.empty() && s.size() <= 64 &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
             std::string::npos;
}

std::string marker_word(const YAML::Node& node, const std::string& key) {
  std::string s = scalar(node, key);
  if (!is_marker_word(s)) {
    throw Problem{line_of(node), key, "expected 1-64 of [A-Za-z0-9_], got '" + s + "'"};
  }
  return s;
}

UsdtRule parse_usdt_rule(const YAML::Node& node, const std::string& key,
                         const std::vector<Matcher>& matchers) {
  require_map(node, key);
  check_keys(node, key, {"targets", "binary", "provider", "probe", "span", "start", "end", "key"});
  UsdtRule r;
  const auto& targets = node["targets"];
  if (!targets || !targets.IsSequence() || targets.size() == 0) {
    throw Problem{line_of(node), key + ".targets", "expected a list of target names"};
  }
  for (const auto& target : targets) {
    const std::string name = scalar(target, key + ".targets");
    const bool matcher = std::any_of(matchers.begin(), matchers.end(),
                                     [&](const Matcher& m) { return m.name == name; });
    if (!matcher && name != "ceph-osd" && name != "librados-client") {
      throw Problem{line_of(target), key + ".targets",
                    "'" + name +
                        "' is not ceph-osd, librados-client or the name of a matcher "
                        "(discovery.matchers)"};
    }
    r.targets.push_back(name);
  }
  if (!node["binary"] || !node["provider"]) {
    throw Problem{line_of(node), key, "needs binary and provider"};
  }
  r.binary = scalar(node["binary"], key + ".binary");
  if (r.binary.empty() || r.binary.size() > 4096 || r.binary.find('\0') != std::string::npos ||
      (r.binary.find('/') != std::string::npos && r.binary[0] != '/')) {
    throw Problem{line_of(node["binary"]), key + ".binary",
                  "expected an absolute path or a library's file name"};
  }
  r.provider = marker_word(node["provider"], key + ".provider");
  if (node["probe"]) {
    if (node["span"] || node["start"] || node["end"] || node["key"]) {
      throw Problem{line_of(node), key, "probe (counted) and span are exclusive"};
    }
    r.probe = marker_word(node["probe"], key + ".probe");
    return r;
  }
  if (!node["span"] || !node["start"] || !node["end"]) {
    throw Problem{line_of(node), key, "needs probe, or span with start and end"};
  }
  r.span = marker_word(node["span"], key + ".span");
  r.start = marker_word(node["start"], key + ".start");
  r.end = marker_word(node["end"], key + ".end");
  if (const auto& k = node["key"]) {
    r.key = static_cast<unsigned>(positive_count(k, key + ".key"));
    if (r.key > 12) {
      throw Problem{line_of(k), key + ".key", "an argument number from 1 to 12"};
    }
  }
  return r;
}

std::vector<UsdtRule> parse_usdt(const YAML::Node& list, const std::vector<Matcher>& matchers) {
  if (!list.IsSequence()) {
    throw Problem{line_of(list), "usdt", "expected a list"};
  }
  if (list.size() > 256) {
    throw Problem{line_of(list), "usdt", "at most 256 entries"};
  }
  std::vector<UsdtRule> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string key = "usdt[" + std::to_string(i) + "]";
    out.push_back(parse_usdt_rule(list[i], key, matchers));
    // One series name per provider: two entries of one name would add into one series.
    if (!names.insert(out.back().name()).second) {
      throw Problem{line_of(list[i]), key, out.back().name() + " is named twice"};
    }
  }
  return out;
}

// Why TEXT is not an endpoint spans go to (http:// or https://, a host, printable ASCII
// without spaces, at most 2048 bytes); nullopt when it is one.
std::optional<std::string> otlp_endpoint_problem(const std::string& text) {
  if (text.size() > 2048) {
    return "longer than 2048 bytes";
  }
  if (std::any_of(text.begin(), text.end(), [](char c) { return c <= ' ' || c > '~'; })) {
    return "spaces or bytes outside printable ASCII";
  }
  const auto scheme = text.find("://");
  const std::string s = scheme == std::string::npos ? "" : text.substr(0, scheme);
  if (s != "http" && s != "https") {
    return "expected http://HOST[:PORT]/PATH or https://...";
  }
  if (text.size() == scheme + 3 || text[scheme + 3] == '/') {
    return "no host";
  }
  return std::nullopt;
}

void parse_traces(const YAML::Node& node, Config::Traces& out) {
  require_map(node, "traces");
  check_keys(node, "traces", {"otlp_endpoint", "queue_size", "timeout"});
  if (node["otlp_endpoint"]) {
    out.otlp_endpoint = scalar(node["otlp_endpoint"], "traces.otlp_endpoint");
    if (const auto problem = otlp_endpoint_problem(out.otlp_endpoint);
        problem && !out.otlp_endpoint.empty()) {
      throw Problem{line_of(node["otlp_endpoint"]), "traces.otlp_endpoint",
                    *problem + ", got '" + label_value(out.otlp_endpoint) + "'"};
    }
  }
  if (node["queue_size"]) {
    out.queue_size = positive_count(node["queue_size"], "traces.queue_size");
    if (out.queue_size > 1'000'000) {
      throw Problem{line_of(node["queue_size"]), "traces.queue_size", "at most 1000000"};
    }
  }
  if (node["timeout"]) {
    out.timeout = duration(node["timeout"], "traces.timeout");  // positive: duration() says
  }
}

Config parse_root(const YAML::Node& root, const std::string& config_dir) {
  Config cfg;
  if (root.IsNull()) {
    return cfg;  // an empty file means every default
  }
  require_map(root, "(top level)");
  check_keys(root, "",
             {"listen", "log_level", "mount_tracefs", "strict_attach", "discovery", "collectors",
              "limits", "profiles", "web_config_file", "usdt", "traces"});
  if (root["listen"]) {
    cfg.listen = scalar(root["listen"], "listen");
    const auto colon = cfg.listen.rfind(':');
    const std::string port = colon == std::string::npos ? cfg.listen : cfg.listen.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port.substr(0, 6)) > 65535) {
      throw Problem{line_of(root["listen"]), "listen",
                    "expected HOST:PORT or PORT, got '" + cfg.listen + "'"};
    }
  }
  if (root["log_level"]) {
    cfg.log_level = scalar(root["log_level"], "log_level");
    if (!kLogLevels.contains(cfg.log_level)) {
      throw Problem{
          line_of(root["log_level"]), "log_level",
          "unknown level '" + cfg.log_level + "' (trace, debug, info, warn, error, critical, off)"};
    }
  }
  read_if(root, "", "mount_tracefs", cfg.mount_tracefs, boolean);
  read_if(root, "", "strict_attach", cfg.strict_attach, boolean);
  read_if(root, "", "web_config_file", cfg.web_config_file, absolute_path);
  if (root["discovery"]) {
    parse_discovery(root["discovery"], cfg.discovery);
  }
  if (const auto& c = root["collectors"]) {
    require_map(c, "collectors");
    check_keys(c, "collectors", {"syscall", "block", "vfs", "osd", "rados", "kclient"});
    if (c["syscall"]) {
      cfg.collectors.syscall = parse_collector(c["syscall"], "collectors.syscall",
                                               {"fentry", "tracepoint"}, {"buckets", "syscalls"});
      if (const auto& list = c["syscall"]["syscalls"]) {
        cfg.collectors.syscalls = syscall_list(list, "collectors.syscall.syscalls");
      }
    }
    if (c["block"]) {
      cfg.collectors.block =
          parse_collector(c["block"], "collectors.block", {"tp_btf", "tracepoint"},
                          {"freeze_hook", "target_histograms"});
      read_if(c["block"], "collectors.block", "target_histograms",
              cfg.collectors.block_target_histograms, boolean);
      if (const auto& h = c["block"]["freeze_hook"]) {
        cfg.collectors.block_freeze_hook =
            one_of(h, "collectors.block.freeze_hook", "hook", {"auto", "fentry", "kprobe"});
      }
    }
    if (c["vfs"]) {
      cfg.collectors.vfs =
          parse_collector(c["vfs"], "collectors.vfs", {"fentry", "kprobe"}, {"buckets"});
    }
    if (c["kclient"]) {
      cfg.collectors.kclient =
          parse_collector(c["kclient"], "collectors.kclient", {"fentry", "kprobe"}, {"buckets"});
    }
    if (c["rados"]) {
      cfg.collectors.rados = parse_collector(c["rados"], "collectors.rados", {"uprobe"},
                                             {"buckets", "instance_labels", "slow_op_threshold"});
      read_if(c["rados"], "collectors.rados", "instance_labels",
              cfg.collectors.rados_instance_labels, boolean);
      read_if(c["rados"], "collectors.rados", "slow_op_threshold",
              cfg.collectors.rados_slow_op_threshold, threshold);
    }
    if (c["osd"]) {
      if (const auto& old = c["osd"]["bluestore_stages"]) {
        throw Problem{line_of(old), "collectors.osd.bluestore_stages",
                      "replaced by collectors.osd.detail (never, always, auto)"};
      }
      cfg.collectors.osd = parse_collector(
          c["osd"], "collectors.osd", {"uprobe"},
          {"slow_op_threshold", "slow_op_records", "detail", "detail_window", "detail_min_interval",
           "detail_p99_bound", "buckets", "bluestore_layer"});
      read_if(c["osd"], "collectors.osd", "slow_op_threshold", cfg.collectors.osd_slow_op_threshold,
              threshold);
      if (const auto& n = c["osd"]["slow_op_records"]) {
        cfg.collectors.osd_slow_op_records = positive_count(n, "collectors.osd.slow_op_records");
        if (cfg.collectors.osd_slow_op_records > 10'000) {  // about 1 KiB each
          throw Problem{line_of(n), "collectors.osd.slow_op_records", "at most 10000"};
        }
      }
      read_if(c["osd"], "collectors.osd", "bluestore_layer", cfg.collectors.osd_bluestore_layer,
              boolean);
      if (const auto& d = c["osd"]["detail"]) {
        cfg.collectors.osd_detail = choice(d, "collectors.osd.detail", "detail", kDetailModes);
      }
      read_if(c["osd"], "collectors.osd", "detail_window", cfg.collectors.osd_detail_window,
              duration);
      read_if(c["osd"], "collectors.osd", "detail_min_interval",
              cfg.collectors.osd_detail_min_interval, duration);
      read_if(c["osd"], "collectors.osd", "detail_p99_bound", cfg.collectors.osd_detail_p99_bound,
              duration);
    }
  }
  if (const auto& l = root["limits"]) {
    require_map(l, "limits");
    check_keys(l, "limits", {"max_series"});
    read_if(l, "limits", "max_series", cfg.limits.max_series, positive_count);
  }
  if (root["profiles"]) {
    parse_profiles(root["profiles"], cfg.profiles, config_dir);
  }
  if (const auto& t = root["traces"]) {
    parse_traces(t, cfg.traces);
  }
  if (root["usdt"]) {
    cfg.usdt = parse_usdt(root["usdt"], cfg.discovery.matchers);
  }
  return cfg;
}

}  // namespace

const char* to_string(DetailMode mode) {
  for (const auto& [name, value] : kDetailModes) {
    if (value == mode) {
      return name;
    }
  }
  return "auto";
}

std::optional<std::chrono::milliseconds> parse_duration(const std::string& text) {
  static const std::regex kDuration("^([0-9]{1,9})(ms|s|m|h)$");
  std::smatch m;
  if (!std::regex_match(text, m, kDuration)) {
    return std::nullopt;
  }
  const long long n = std::stoll(m[1].str());
  const std::string unit = m[2].str();
  long long ms = n;
  if (unit == "s") {
    ms = n * 1000;
  } else if (unit == "m") {
    ms = n * 60'000;
  } else if (unit == "h") {
    ms = n * 3'600'000;
  }
  return std::chrono::milliseconds(ms);
}

Result<Config> parse_config(const std::string& yaml_text, const std::string& source,
                            const std::string& config_dir) {
  return yaml::parse_yaml_text<Config>(
      yaml_text, source, [&](const YAML::Node& root) { return parse_root(root, config_dir); });
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return make_error(ErrorKind::kNotFound, path + ": cannot read the config file");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  if (ec) {
    return make_error(ErrorKind::kSystem, path + ": " + ec.message(), ec.value());
  }
  return parse_config(text.str(), path, absolute.parent_path().string());
}

}  // namespace cephscope
