#include "discovery/containers.h"

#include <dirent.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/label_value.h"
#include "core/safe_file.h"
#include "discovery/classify.h"

namespace cephscope {
namespace {

constexpr std::size_t kIdLength = 64;
constexpr std::size_t kShortId = 12;

bool is_hex_id(std::string_view text) {
  return text.size() == kIdLength && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string_view strip_suffix(std::string_view text, std::string_view suffix) {
  if (text.ends_with(suffix)) {
    text.remove_suffix(suffix.size());
  }
  return text;
}

// "<prefix><64 hex>[.scope]" -> the id, else "".
std::string_view prefixed_id(std::string_view part, std::string_view prefix) {
  if (!part.starts_with(prefix)) {
    return {};
  }
  std::string_view id = strip_suffix(part.substr(prefix.size()), ".scope");
  return is_hex_id(id) ? id : std::string_view{};
}

struct Scope {
  std::string_view prefix;
  const char* runtime;
};
// Conmon and similar helpers live in "<runtime>-conmon-<id>": not the container itself.
constexpr std::array kScopes = {
    Scope{"libpod-", "podman"},
    Scope{"docker-", "docker"},
    Scope{"cri-containerd-", "containerd"},
    Scope{"crio-", "cri-o"},
};

// A pod's slice or directory: "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid with _>.slice".
std::string pod_uid_of(std::string_view part) {
  part = strip_suffix(part, ".slice");
  const auto at = part.rfind("pod");
  if (at == std::string_view::npos || (at != 0 && part[at - 1] != '-')) {
    return "";
  }
  std::string uid(part.substr(at + 3));
  std::replace(uid.begin(), uid.end(), '_', '-');
  return is_uuid(uid) ? uid : "";
}

// cephadm's unit: "ceph-<fsid>@<type>.<id>.service"; the fsid, else "".
std::string cephadm_fsid(std::string_view unit) {
  constexpr std::size_t kUuid = 36;
  if (!unit.starts_with("ceph-") || !unit.ends_with(".service") || unit.size() < 5 + kUuid + 1 ||
      unit[5 + kUuid] != '@') {
    return "";
  }
  std::string fsid(unit.substr(5, kUuid));
  return is_uuid(fsid) ? fsid : "";
}

void read_path(std::string_view path, CgroupFacts& out) {
  bool kube = false;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) {
      end = path.size();
    }
    const std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty()) {
      continue;
    }
    kube = kube || part.starts_with("kubepods");
    if (kube) {
      if (auto uid = pod_uid_of(part); !uid.empty()) {
        out.pod_uid = uid;
        continue;
      }
      if (is_hex_id(part)) {  // cgroupfs: /kubepods/<qos>/pod<uid>/<id>
        out.runtime = "kubernetes";
        out.id = part;
        continue;
      }
    }
    if (part.ends_with(".service")) {
      out.unit = part;
      out.unit_fsid = cephadm_fsid(part);
      continue;
    }
    for (const auto& scope : kScopes) {
      if (auto id = prefixed_id(part, scope.prefix); !id.empty()) {
        out.runtime = scope.runtime;
        out.id = id;
        break;
      }
    }
  }
}

// A runtime's JSON record: a regular file of at most MAX_BYTES, else a discarded value.
nlohmann::json read_record(const std::string& path, std::size_t max_bytes) {
  auto fd = open_regular(path, SafeOpen{.max_size = max_bytes});
  if (!fd.ok()) {
    return nlohmann::json::value_t::discarded;
  }
  auto text = read_capped(fd->get(), path, max_bytes);
  if (!text.ok()) {
    return nlohmann::json::value_t::discarded;
  }
  return nlohmann::json::parse(*text, nullptr, false);
}

// podman keeps every container's names in one file: [{"id": ..., "names": [...]}, ...].
std::string podman_name(const std::string& storage, const std::string& id) {
  const auto doc =
      read_record(storage + "/overlay-containers/containers.json", kMaxPodmanContainersJson);
  if (!doc.is_array()) {
    return "";
  }
  for (const auto& c : doc) {
    if (c.is_object() && c.value("id", "") == id) {
      const auto names = c.find("names");
      if (names != c.end() && names->is_array() && !names->empty() && names->front().is_string()) {
        return names->front().get<std::string>();
      }
    }
  }
  return "";
}

// docker: /var/lib/docker/containers/<id>/config.v2.json, {"Name": "/name", ...}.
std::string docker_name(const std::string& root, const std::string& id) {
  const auto doc =
      read_record(root + "/containers/" + id + "/config.v2.json", kMaxDockerConfigJson);
  if (!doc.is_object() || !doc.contains("Name") || !doc["Name"].is_string()) {
    return "";
  }
  std::string name = doc["Name"].get<std::string>();
  return name.starts_with('/') ? name.substr(1) : name;
}

// The kubelet's log directory of the pod: <namespace>_<pod>_<uid>. Neither a namespace nor a
// pod name can hold '_', so the split is unambiguous.
void kubelet_names(const std::string& pod_logs, const std::string& uid, ContainerLabels& out) {
  DIR* dir = opendir(pod_logs.c_str());
  if (dir == nullptr) {
    return;
  }
  const std::string suffix = "_" + uid;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!name.ends_with(suffix)) {
      continue;
    }
    const std::string_view rest = name.substr(0, name.size() - suffix.size());
    const auto split = rest.find('_');
    if (split == std::string_view::npos || split == 0 || split + 1 == rest.size()) {
      continue;
    }
    out.pod_namespace = label_value(rest.substr(0, split));
    out.pod = label_value(rest.substr(split + 1));
    break;
  }
  closedir(dir);
}

}  // namespace

CgroupFacts parse_cgroup(std::string_view text) {
  CgroupFacts out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    // hierarchy-ID:controllers:path; the path may itself hold ':'.
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      continue;
    }
    read_path(line.substr(second + 1), out);
  }
  return out;
}

ContainerLabels container_labels(const CgroupFacts& facts, const ContainerStateDirs& dirs) {
  ContainerLabels out;
  if (!facts.pod_uid.empty()) {
    kubelet_names(dirs.kubelet_pod_logs, facts.pod_uid, out);
  }
  if (!facts.in_container()) {
    return out;
  }
  std::string name;
  if (facts.runtime == "podman") {
    name = podman_name(dirs.podman, facts.id);
  } else if (facts.runtime == "docker") {
    name = docker_name(dirs.docker, facts.id);
  }
  out.container = label_value(name.empty() ? facts.id.substr(0, kShortId) : name);
  return out;
}

}  // namespace cephscope
