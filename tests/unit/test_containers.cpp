#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "discovery/containers.h"
#include "support/temp_dir.h"

using namespace cephscope;
using cephscope::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kId = "4f1c2a9e0b7d4c3a8e6f5d2c1b0a99887766554433221100ffeeddccbbaa9988";
const std::string kFsid = "8a3e4f6c-1b2d-4c5e-9f70-1a2b3c4d5e6f";
const std::string kPod = "0f3e9a1c-5b7d-4e2f-8a6b-9c0d1e2f3a4b";

}  // namespace

TEST_CASE("a cgroup names the container, the pod and the cephadm unit", "[containers]") {
  SECTION("the host: no container") {
    const auto f = parse_cgroup("0::/user.slice/user-0.slice/session-3.scope\n");
    CHECK_FALSE(f.in_container());
    CHECK(f.pod_uid.empty());
  }
  SECTION("podman under cgroupfs, cgroup v1 lines") {
    const auto f = parse_cgroup("12:pids:/libpod_parent/libpod-" + kId +
                                "\n1:name=systemd:/libpod_parent/libpod-" + kId + "\n");
    CHECK(f.runtime == "podman");
    CHECK(f.id == kId);
  }
  SECTION("podman's conmon is not the container") {
    const auto f = parse_cgroup("0::/machine.slice/libpod-conmon-" + kId + ".scope\n");
    CHECK_FALSE(f.in_container());
  }
  SECTION("cephadm: the unit gives the fsid, the scope the container") {
    const auto f =
        parse_cgroup("0::/system.slice/system-ceph\\x2d" + kFsid + ".slice/ceph-" + kFsid +
                     "@osd.3.service/libpod-payload-" + kId + "\n" + "0::/system.slice/ceph-" +
                     kFsid + "@osd.3.service/libpod-" + kId + ".scope/container\n");
    CHECK(f.unit == "ceph-" + kFsid + "@osd.3.service");
    CHECK(f.unit_fsid == kFsid);
    CHECK(f.runtime == "podman");
    CHECK(f.id == kId);
  }
  SECTION("a unit that is not cephadm's gives no fsid") {
    CHECK(parse_cgroup("0::/system.slice/ceph-osd@3.service\n").unit_fsid.empty());
    CHECK(parse_cgroup("0::/system.slice/ceph-not-a-uuid-at-all-not-a-uuid-at-all@osd.3.service\n")
              .unit_fsid.empty());
  }
  SECTION("docker, systemd driver") {
    const auto f = parse_cgroup("0::/system.slice/docker-" + kId + ".scope\n");
    CHECK(f.runtime == "docker");
    CHECK(f.id == kId);
  }
  SECTION("Kubernetes, systemd driver: the pod UID with '_' for '-'") {
    std::string uid = kPod;
    std::replace(uid.begin(), uid.end(), '-', '_');
    const auto f =
        parse_cgroup("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uid +
                     ".slice/cri-containerd-" + kId + ".scope\n");
    CHECK(f.pod_uid == kPod);
    CHECK(f.runtime == "containerd");
    CHECK(f.id == kId);
  }
  SECTION("Kubernetes, cgroupfs driver") {
    const auto f = parse_cgroup("4:memory:/kubepods/burstable/pod" + kPod + "/" + kId + "\n");
    CHECK(f.pod_uid == kPod);
    CHECK(f.runtime == "kubernetes");
    CHECK(f.id == kId);
  }
  SECTION("malformed lines and ids give nothing") {
    for (const std::string& text :
         std::vector<std::string>{"", "garbage", "0:/libpod-" + kId, "0::/libpod-" + kId.substr(1),
                                  "0::/libpod-" + kId.substr(0, 63) + "G",
                                  "0::/kubepods/podnot-a-uuid/" + kId.substr(2)}) {
      INFO(text);
      const auto f = parse_cgroup(text);
      CHECK_FALSE(f.in_container());
      CHECK(f.pod_uid.empty());
    }
  }
}

TEST_CASE("containers are named from the runtime's own records", "[containers]") {
  const TempDir tmp("cephscope-containers");
  ContainerStateDirs dirs{(tmp.path() / "podman").string(), (tmp.path() / "docker").string(),
                          (tmp.path() / "pods").string()};
  CgroupFacts f;
  f.id = kId;

  SECTION("podman's containers.json") {
    f.runtime = "podman";
    CHECK(container_labels(f, dirs).container == kId.substr(0, 12));  // no record: short id
    fs::create_directories(tmp.path() / "podman/overlay-containers");
    std::ofstream(tmp.path() / "podman/overlay-containers/containers.json")
        << R"([{"id":"other","names":["x"]},{"id":")" << kId << R"(","names":["ceph-)" << kFsid
        << R"(-osd-3"]}])";
    CHECK(container_labels(f, dirs).container == "ceph-" + kFsid + "-osd-3");
  }
  SECTION("a malformed or oversized record leaves the short id") {
    f.runtime = "podman";
    fs::create_directories(tmp.path() / "podman/overlay-containers");
    std::ofstream(tmp.path() / "podman/overlay-containers/containers.json") << "[{\"id\": ";
    CHECK(container_labels(f, dirs).container == kId.substr(0, 12));
    fs::resize_file(tmp.path() / "podman/overlay-containers/containers.json",
                    kMaxPodmanContainersJson + 1);
    CHECK(container_labels(f, dirs).container == kId.substr(0, 12));
  }
  SECTION("docker's config.v2.json; a name is made a valid label value") {
    f.runtime = "docker";
    fs::create_directories(tmp.path() / "docker/containers" / kId);
    std::ofstream(tmp.path() / "docker/containers" / kId / "config.v2.json")
        << R"({"Name":"/osd\u0000\"3\n"})";
    const auto name = container_labels(f, dirs).container;
    CHECK(name.starts_with("osd"));
    CHECK(name.find('\n') == std::string::npos);
    CHECK(name.find('\0') == std::string::npos);
  }
  SECTION("the kubelet's pod log directory names the pod and its namespace") {
    f.runtime = "containerd";
    f.pod_uid = kPod;
    fs::create_directories(tmp.path() / "pods" / ("rook-ceph_other-pod_" + kFsid));
    fs::create_directories(tmp.path() / "pods" /
                           ("rook-ceph_rook-ceph-osd-3-5d9f7c6b8-x2x9q_" + kPod));
    const auto labels = container_labels(f, dirs);
    CHECK(labels.pod == "rook-ceph-osd-3-5d9f7c6b8-x2x9q");
    CHECK(labels.pod_namespace == "rook-ceph");
    CHECK(labels.container == kId.substr(0, 12));
  }
}
