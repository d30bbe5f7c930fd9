#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "config/config.h"

using namespace cephscope;

namespace {

// The error message for a config that must be rejected.
std::string rejected(const std::string& yaml) {
  auto r = parse_config(yaml, "test.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kInvalidInput);
  return r.error().message;
}

}  // namespace

TEST_CASE("the shipped default config parses", "[config]") {
  auto r = load_config(std::string(CEPHSCOPE_SOURCE_DIR) + "/config/cephscope.yaml");
  REQUIRE(r.ok());
  CHECK(r->listen == "0.0.0.0:9488");
  CHECK(r->discovery.scan_interval == std::chrono::seconds(10));
  CHECK(r->discovery.series_ttl == std::chrono::minutes(5));
  CHECK(r->collectors.vfs.hook == "auto");
  CHECK(r->collectors.osd_bluestore_layer);
  CHECK(r->limits.max_series == 50000);
  // The installed profiles first, then the repository's beside the file (a build tree's run).
  const std::vector<std::string> dirs = {"/usr/share/cephscope/profiles",
                                         std::string(CEPHSCOPE_SOURCE_DIR) + "/config/profiles"};
  CHECK(r->profiles.shipped_dirs == dirs);
}

TEST_CASE("a relative shipped directory is taken from the config file's directory", "[config]") {
  auto r = parse_config("profiles: {shipped_dirs: [/abs, profiles, ../p/./q/]}\n", "x.yaml",
                        "/etc/cephscope");
  REQUIRE(r.ok());
  const std::vector<std::string> dirs = {"/abs", "/etc/cephscope/profiles", "/etc/p/q/"};
  CHECK(r->profiles.shipped_dirs == dirs);
  // Text from no file has no directory to take it from.
  const auto e = rejected("profiles: {shipped_dirs: [profiles]}\n");
  CHECK(e.find("test.yaml:1: profiles.shipped_dirs: expected an absolute path, or one relative "
               "to the config file's directory") != std::string::npos);
  CHECK(rejected("profiles: {shipped_dirs: ['']}\n").find("got ''") != std::string::npos);
}

TEST_CASE("an empty config means every default", "[config]") {
  auto r = parse_config("", "empty.yaml");
  REQUIRE(r.ok());
  CHECK(r->collectors.syscall.enabled);
  CHECK(r->discovery.ceph_osd);
}

TEST_CASE("a full config is read", "[config]") {
  auto r = parse_config(R"(
listen: "127.0.0.1:9999"
log_level: debug
discovery:
  scan_interval: 250ms
  series_ttl: 2h
  matchers:
    - {name: fio, comm: "^fio$"}
    - {exe: "/usr/bin/.*"}
  containers: {kubelet_pod_logs: /host/var/log/pods}
collectors:
  syscall: {hook: fentry}
  vfs: {enabled: false, hook: kprobe}
  block: {hook: tracepoint}
  osd: {enabled: false, slow_op_threshold: 250ms, detail: always, bluestore_layer: false}
  rados: {enabled: true, buckets: coarse, instance_labels: true}
  kclient: {hook: kprobe, buckets: none}
limits: {max_series: 10}
traces: {otlp_endpoint: "https://tempo.example:4318/v1/traces", queue_size: 64, timeout: 2s}
)",
                        "full.yaml");
  REQUIRE(r.ok());
  CHECK(r->listen == "127.0.0.1:9999");
  CHECK(r->discovery.scan_interval == std::chrono::milliseconds(250));
  CHECK(r->discovery.series_ttl == std::chrono::hours(2));
  CHECK(r->discovery.containers.kubelet_pod_logs == "/host/var/log/pods");
  CHECK(r->discovery.containers.podman == "/var/lib/containers/storage");  // the default
  REQUIRE(r->discovery.matchers.size() == 2);
  CHECK(r->discovery.matchers[0].name == "fio");
  CHECK(std::regex_search("fio", *r->discovery.matchers[0].comm));
  CHECK_FALSE(r->discovery.matchers[1].comm.has_value());
  CHECK(r->collectors.syscall.hook == "fentry");
  CHECK_FALSE(r->collectors.vfs.enabled);
  CHECK(r->collectors.vfs.hook == "kprobe");
  CHECK(r->collectors.block.hook == "tracepoint");
  CHECK(r->collectors.kclient.enabled);
  CHECK(r->collectors.kclient.hook == "kprobe");
  CHECK(r->collectors.kclient.buckets == Buckets::kNone);
  CHECK_FALSE(r->collectors.osd.enabled);
  CHECK(r->collectors.osd_slow_op_threshold == std::chrono::milliseconds(250));
  CHECK(r->collectors.osd_detail == DetailMode::kAlways);
  CHECK_FALSE(r->collectors.osd_bluestore_layer);
  CHECK(r->collectors.rados.enabled);
  CHECK(r->collectors.rados.buckets == Buckets::kCoarse);
  CHECK(r->collectors.rados_instance_labels);
  CHECK(r->limits.max_series == 10);
  CHECK(r->traces.otlp_endpoint == "https://tempo.example:4318/v1/traces");
  CHECK(r->traces.queue_size == 64);
  CHECK(r->traces.timeout == std::chrono::seconds(2));
}

TEST_CASE("spans out: off by default, and only to an http(s) endpoint", "[config]") {
  const auto defaults = parse_config("", "empty.yaml");
  REQUIRE(defaults.ok());
  CHECK(defaults->traces.otlp_endpoint.empty());
  CHECK(parse_config("traces: {otlp_endpoint: \"\"}\n", "t.yaml").ok());  // off, said so
  CHECK(rejected("traces:\n  otlp_endpoint: ftp://x/v1/traces\n") ==
        "test.yaml:2: traces.otlp_endpoint: expected http://HOST[:PORT]/PATH or https://..., got "
        "'ftp://x/v1/traces'");
  CHECK(rejected("traces:\n  otlp_endpoint: \"http://a b\"\n") ==
        "test.yaml:2: traces.otlp_endpoint: spaces or bytes outside printable ASCII, got "
        "'http://a b'");
  CHECK(rejected("traces:\n  otlp_endpoint: http:///v1\n") ==
        "test.yaml:2: traces.otlp_endpoint: no host, got 'http:///v1'");
  CHECK(rejected("traces: {queue_size: 0}\n").starts_with("test.yaml:1: traces.queue_size: "));
  CHECK(rejected("traces: {queue_size: 2000000}\n") ==
        "test.yaml:1: traces.queue_size: at most 1000000");
  CHECK(
      rejected("traces: {timeout: 0s}\n").starts_with("test.yaml:1: traces.timeout: expected a "));
  CHECK(rejected("traces: {endpoint: x}\n") == "test.yaml:1: traces.endpoint: unknown key");
}

TEST_CASE("each config error names the key and its line", "[config]") {
  CHECK(rejected("discovery:\n  containers:\n    docker_root: var/lib/docker\n") ==
        "test.yaml:3: discovery.containers.docker_root: expected an absolute path, got "
        "'var/lib/docker'");
  CHECK(rejected("listen: 1\nlisten_port: 9\n") == "test.yaml:2: listen_port: unknown key");
  CHECK(rejected("discovery:\n  scan_interval: 10s\n  scan_intervall: 5s\n") ==
        "test.yaml:3: discovery.scan_intervall: unknown key");
  CHECK(rejected("collectors:\n  syscall:\n    enabled: perhaps\n") ==
        "test.yaml:3: collectors.syscall.enabled: expected true or false, got 'perhaps'");
  CHECK(rejected("discovery:\n  series_ttl: 10 minutes\n") ==
        "test.yaml:2: discovery.series_ttl: expected a positive duration such as 500ms, 10s, 5m or "
        "1h, got '10 "
        "minutes'");
  CHECK(rejected("discovery:\n  scan_interval: 0s\n")
            .starts_with("test.yaml:2: discovery.scan_interval: "));
  CHECK(rejected("discovery:\n  scan_interval: -5s\n")
            .starts_with("test.yaml:2: discovery.scan_interval: "));
  CHECK(rejected("discovery:\n  matchers:\n    - {comm: \"(unclosed\"}\n")
            .starts_with(
                "test.yaml:3: discovery.matchers[0].comm: invalid regular expression '(unclosed'"));
  CHECK(rejected("discovery:\n  matchers:\n    - {name: x}\n") ==
        "test.yaml:3: discovery.matchers[0]: a matcher needs exe or comm");
  CHECK(rejected("discovery:\n  matchers: {comm: x}\n") ==
        "test.yaml:2: discovery.matchers: expected a list");
  CHECK(rejected("listen: \"localhost:http\"\n") ==
        "test.yaml:1: listen: expected HOST:PORT or PORT, got 'localhost:http'");
  CHECK(rejected("listen: \"0.0.0.0:70000\"\n").starts_with("test.yaml:1: listen: "));
  CHECK(rejected("log_level: loud\n").starts_with("test.yaml:1: log_level: unknown level 'loud'"));
  CHECK(rejected("collectors:\n  vfs: {hook: uprobe}\n") ==
        "test.yaml:2: collectors.vfs.hook: unknown hook 'uprobe' (one of: auto, fentry, kprobe)");
  CHECK(rejected("collectors:\n  kclient: {hook: tracepoint}\n") ==
        "test.yaml:2: collectors.kclient.hook: unknown hook 'tracepoint' (one of: auto, fentry, "
        "kprobe)");
  CHECK(rejected("collectors:\n  syscall: {hook: kprobe}\n") ==
        "test.yaml:2: collectors.syscall.hook: unknown hook 'kprobe' (one of: auto, fentry, "
        "tracepoint)");
  CHECK(rejected("collectors:\n  syscall: {buckets: some}\n") ==
        "test.yaml:2: collectors.syscall.buckets: unknown buckets 'some' (one of: auto, full, "
        "coarse, none)");
  CHECK(rejected("collectors:\n  block: {buckets: full}\n") ==
        "test.yaml:2: collectors.block.buckets: unknown key");
  CHECK(rejected("collectors:\n  block: {freeze_hook: uprobe}\n") ==
        "test.yaml:2: collectors.block.freeze_hook: unknown hook 'uprobe' (one of: auto, fentry, "
        "kprobe)");
  CHECK(rejected("collectors:\n  osd: {slow_op_threshold: soon}\n")
            .starts_with("test.yaml:2: collectors.osd.slow_op_threshold: "));
  CHECK(rejected("collectors:\n  rados: {slow_op_threshold: -1s}\n")
            .starts_with("test.yaml:2: collectors.rados.slow_op_threshold: "));
  CHECK(rejected("collectors:\n  syscall: {syscalls: [pread64, open]}\n") ==
        "test.yaml:2: collectors.syscall.syscalls: unknown syscall 'open' (one of: read, write, "
        "pread64, pwrite64, readv, writev, preadv, pwritev, preadv2, pwritev2, fsync, fdatasync, "
        "sync_file_range, io_submit, io_getevents, io_uring_enter, sendto, sendmsg, sendmmsg, "
        "recvfrom, recvmsg, recvmmsg)");
  CHECK(rejected("collectors:\n  syscall: {syscalls: []}\n") ==
        "test.yaml:2: collectors.syscall.syscalls: expected a list of syscalls (or enabled: false "
        "for none)");
  CHECK(rejected("collectors:\n  osd: {detail: maybe}\n") ==
        "test.yaml:2: collectors.osd.detail: unknown detail 'maybe' (one of: never, always, auto)");
  CHECK(
      rejected("collectors:\n  osd: {detail_window: 0s}\n")
          .starts_with("test.yaml:2: collectors.osd.detail_window: expected a positive duration"));
  CHECK(rejected("collectors:\n  osd: {bluestore_stages: true}\n") ==
        "test.yaml:2: collectors.osd.bluestore_stages: replaced by collectors.osd.detail (never, "
        "always, auto)");
  CHECK(rejected("collectors:\n  osd: {bluestore_layer: maybe}\n")
            .starts_with("test.yaml:2: collectors.osd.bluestore_layer: "));
  CHECK(rejected("collectors:\n  rados: {instance_labels: image}\n")
            .starts_with("test.yaml:2: collectors.rados.instance_labels: "));
  CHECK(rejected("collectors:\n  rados: {hook: fentry}\n") ==
        "test.yaml:2: collectors.rados.hook: unknown hook 'fentry' (one of: auto, uprobe)");
  CHECK(rejected("collectors:\n  nfs: {enabled: true}\n") ==
        "test.yaml:2: collectors.nfs: unknown key");
  CHECK(rejected("collectors:\n  syscall: true\n") ==
        "test.yaml:2: collectors.syscall: expected a mapping");
  CHECK(rejected("limits:\n  max_series: 0\n") ==
        "test.yaml:2: limits.max_series: expected a positive whole number, got '0'");
  CHECK(rejected("limits:\n  max_series: -3\n").starts_with("test.yaml:2: limits.max_series: "));
  CHECK(rejected("limits:\n  max_series: lots\n").starts_with("test.yaml:2: limits.max_series: "));
  CHECK(rejected("mount_tracefs: [1, 2]\n")
            .starts_with("test.yaml:1: mount_tracefs: expected true or false"));
  CHECK(rejected("listen: [a]\n") == "test.yaml:1: listen: expected a string");
  CHECK(rejected("- just\n- a list\n") == "test.yaml:1: (top level): expected a mapping");
  CHECK(rejected("discovery: {scan_interval: 1s\n").starts_with("test.yaml:"));
  CHECK(rejected("discovery: {scan_interval: 1s\n").find("not valid YAML") != std::string::npos);
}

// libstdc++ reads these numbers without an overflow check (found by tests/fuzz/fuzz_config.cpp).
TEST_CASE("a regular expression's back-references and counts are held to 3 digits", "[config]") {
  CHECK(rejected("discovery:\n  matchers:\n    - {exe: \"(a)\\\\5555555555555555555\"}\n") ==
        "test.yaml:3: discovery.matchers[0].exe: invalid regular expression "
        "'(a)\\5555555555555555555': the number 5555555555555555555 in a back-reference or "
        "repetition count has more than 3 digits");
  CHECK(rejected("discovery:\n  matchers:\n    - {comm: \"x{1,99999}\"}\n")
            .ends_with("the number 99999 in a back-reference or repetition count has more than 3 "
                       "digits"));
  // Long numbers elsewhere are text, and 3-digit counts are kept.
  auto r = parse_config(
      "discovery:\n  matchers:\n    - {name: x, exe: "
      "\"/opt/ceph-12345/(b)\\\\1x{2,999}\\\\{12345}\"}\n",
      "test.yaml");
  REQUIRE(r.ok());
  CHECK(std::regex_search("/opt/ceph-12345/bbxx{12345}", *r->discovery.matchers[0].exe));
}

TEST_CASE("a missing config file is reported by path", "[config]") {
  auto r = load_config("/nonexistent/cephscope.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "/nonexistent/cephscope.yaml: cannot read the config file");
}

TEST_CASE("a slow-op threshold of 0 turns the records off", "[config]") {
  for (const char* zero : {"0", "0s", "0ms"}) {
    INFO(zero);
    auto r = parse_config(std::string("collectors:\n  osd: {slow_op_threshold: ") + zero +
                              "}\n  rados: {slow_op_threshold: " + zero + "}\n",
                          "test.yaml");
    REQUIRE(r.ok());
    CHECK(r->collectors.osd_slow_op_threshold.count() == 0);
    CHECK(r->collectors.rados_slow_op_threshold.count() == 0);
  }
  auto r = parse_config("collectors:\n  rados: {slow_op_threshold: 250ms}\n", "test.yaml");
  REQUIRE(r.ok());
  CHECK(r->collectors.rados_slow_op_threshold == std::chrono::milliseconds(250));
}

TEST_CASE("durations", "[config]") {
  CHECK(parse_duration("250ms") == std::chrono::milliseconds(250));
  CHECK(parse_duration("10s") == std::chrono::seconds(10));
  CHECK(parse_duration("5m") == std::chrono::minutes(5));
  CHECK(parse_duration("1h") == std::chrono::hours(1));
  CHECK_FALSE(parse_duration("1.5s").has_value());
  CHECK_FALSE(parse_duration("s").has_value());
  CHECK_FALSE(parse_duration("10").has_value());
  CHECK_FALSE(parse_duration("10d").has_value());
  CHECK_FALSE(parse_duration("9999999999s").has_value());
}

TEST_CASE("usdt rules are read, and each mistake names its key", "[config]") {
  const std::string matchers = "discovery:\n  matchers:\n    - {name: pyapp, comm: '^usdt-py$'}\n";
  auto r = parse_config(matchers +
                            "usdt:\n"
                            "  - {targets: [pyapp, ceph-osd], binary: /usr/bin/python3.11, "
                            "provider: python, probe: function__entry}\n"
                            "  - {targets: [librados-client], binary: libstdc++.so.6, provider: "
                            "libstdcxx, span: throw_to_catch, start: throw, end: catch, key: 1}\n",
                        "test.yaml");
  REQUIRE(r.ok());
  REQUIRE(r->usdt.size() == 2);
  CHECK(r->usdt[0].targets == std::vector<std::string>{"pyapp", "ceph-osd"});
  CHECK(r->usdt[0].name() == "python:function__entry");
  CHECK(r->usdt[1].span == "throw_to_catch");
  CHECK(r->usdt[1].key == 1);
  CHECK(r->usdt[1].name() == "libstdcxx:throw_to_catch");

  const std::string rule = "  - {targets: [pyapp], binary: libx.so, provider: p, ";
  CHECK(rejected(matchers + "usdt:\n  - {targets: [nobody], binary: libx.so, provider: p, probe: "
                            "q}\n") ==
        "test.yaml:5: usdt[0].targets: 'nobody' is not ceph-osd, librados-client or the name of "
        "a matcher (discovery.matchers)");
  CHECK(rejected(matchers + "usdt:\n" + rule + "probe: q, span: s}\n") ==
        "test.yaml:5: usdt[0]: probe (counted) and span are exclusive");
  CHECK(rejected(matchers + "usdt:\n" + rule + "span: s, start: a}\n") ==
        "test.yaml:5: usdt[0]: needs probe, or span with start and end");
  CHECK(rejected(matchers + "usdt:\n" + rule + "probe: 'has space'}\n") ==
        "test.yaml:5: usdt[0].probe: expected 1-64 of [A-Za-z0-9_], got 'has space'");
  CHECK(rejected(matchers + "usdt:\n  - {targets: [pyapp], binary: lib/x.so, provider: p, "
                            "probe: q}\n") ==
        "test.yaml:5: usdt[0].binary: expected an absolute path or a library's file name");
  CHECK(rejected(matchers + "usdt:\n" + rule + "span: s, start: a, end: b, key: 13}\n") ==
        "test.yaml:5: usdt[0].key: an argument number from 1 to 12");
  CHECK(rejected(matchers + "usdt:\n" + rule + "probe: q}\n" + rule + "probe: q}\n") ==
        "test.yaml:6: usdt[1]: p:q is named twice");
  CHECK(rejected(matchers + "usdt:\n" + rule + "probe: q, extra: 1}\n") ==
        "test.yaml:5: usdt[0].extra: unknown key");
  CHECK(rejected("usdt: {targets: [x]}\n") == "test.yaml:1: usdt: expected a list");
}
