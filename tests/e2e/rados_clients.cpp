// Helpers of the rados collector's e2e tests (tests/e2e/rados_clients.h).
#include "rados_clients.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace cephscope::test::rados_e2e {

std::string daemon_config(bool instance_labels, const std::string& rados_extra,
                          const std::string& scan_interval) {
  return "log_level: info\n"
         "discovery: {scan_interval: " +
         scan_interval +
         ", series_ttl: 5m, ceph_osd: true, rados_clients: true}\n"
         "collectors:\n"
         "  syscall: {enabled: false}\n"
         "  vfs: {enabled: false}\n"
         "  block: {enabled: false}\n"
         "  osd: {enabled: true, detail: never}\n"
         "  rados: {enabled: true, instance_labels: " +
         (instance_labels ? "true" : "false") + rados_extra +
         "}\n"
         "profiles: {shipped_dirs: [" CEPHSCOPE_SOURCE_DIR "/config/profiles]}\n";
}

std::string pool_id(const ClusterInfo& cluster) {
  const auto pools = ceph_json(cluster, {"osd", "pool", "ls", "detail"});
  for (const auto& p : pools) {
    if (p.value("pool_name", "") == cluster.pool) {
      return std::to_string(p.at("pool_id").get<long>());
    }
  }
  FAIL("pool " << cluster.pool << " not in `ceph osd pool ls detail`");
  return "";
}

// Waits until the three probes are attached in PROCESS.
void wait_attached(Daemon& daemon, const std::string& process) {
  auto attached = poll_until(
      [&] {
        return daemon.scrape().sum("cephscope_probe_attached",
                                   {{"collector", "rados"}, {"target", process}}) == 3;
      },
      60s, 200ms);
  INFO(daemon.scrape_text());
  REQUIRE(attached.has_value());
  std::printf("rados probes attached in %s after %.1f s\n", process.c_str(), *attached);
}

// TOOL ARGS as the cluster's client, with its first connect() (to the mon) held for 4 s by
// strace, so that the daemon finds the client and attaches before its first op. Only connect()
// stops (seccomp filter): the client's ops run untraced. In a container cluster the client
// runs in the mon container's namespaces (its own binaries and libraries: /proc/PID/root is
// the container's), entered from the host so that strace holds it.
std::vector<std::string> held_client(const ClusterInfo& cluster, const std::string& tool,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> out = {which("strace"),
                                  "-f",
                                  "--seccomp-bpf",
                                  "-o",
                                  "/dev/null",
                                  "-e",
                                  "trace=connect",
                                  "-e",
                                  "inject=connect:delay_enter=4000000:when=1"};
  if (cluster.tool_prefix.empty()) {
    out.push_back(which(tool));
  } else {
    const auto pid =
        run_command({"podman", "inspect", "-f", "{{.State.Pid}}", cluster.tool_prefix.back()});
    REQUIRE(pid.exit_code == 0);
    const std::string leader = pid.out.substr(0, pid.out.find_first_of("\r\n"));
    out.insert(out.end(),
               {which("nsenter"), "-t", leader, "-m", "-u", "-i", "-n", "-p", "--", tool});
  }
  out.insert(out.end(), {"-c", cluster.conf});
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

// tests/e2e/rados_client.py in WORK with ARGS after its cluster arguments; waits until it is
// connected (and has its images open).
// WRAPPER (a command that execs its arguments) goes before it.
std::unique_ptr<Subprocess> start_client(const ClusterInfo& cluster, const fs::path& work,
                                         const std::vector<std::string>& args, bool late_rbd,
                                         const std::vector<std::string>& wrapper) {
  fs::remove_all(work);
  fs::create_directories(work);
  std::vector<std::string> argv = wrapper;
  if (late_rbd) {
    argv.insert(argv.end(), {"/usr/bin/env", "LATE_RBD=1"});  // env execs python3: same process
  }
  // Debian's python3: python3-rados is built for it, whatever else PATH holds.
  argv.insert(argv.end(),
              {"/usr/bin/python3", std::string(CEPHSCOPE_SOURCE_DIR) + "/tests/e2e/rados_client.py",
               cluster.conf, cluster.pool, work.string()});
  argv.insert(argv.end(), args.begin(), args.end());
  auto client = std::make_unique<Subprocess>(argv, (work / "client.log").string());
  const bool ready = poll_until([&] { return fs::exists(work / "ready"); }, 60s).has_value();
  INFO(read_file((work / "client.log").string()));
  REQUIRE(ready);
  return client;
}

// Every client in WORKS runs its ops now and is done.
void run_clients(const std::vector<fs::path>& works) {
  for (const auto& w : works) {
    std::ofstream(w / "go").close();
  }
  for (const auto& w : works) {
    const bool done = poll_until([&] { return fs::exists(w / "done"); }, 120s).has_value();
    INFO(read_file((w / "client.log").string()));
    REQUIRE(done);
  }
}

void end_clients(const std::vector<fs::path>& works,
                 std::vector<std::unique_ptr<Subprocess>>& clients) {
  for (const auto& w : works) {
    std::ofstream(w / "exit").close();
  }
  for (auto& c : clients) {
    CHECK(c->wait(30s) == std::optional<int>(0));
  }
}

// Makes IMAGE (layering only: no lock or object-map ops beside its data) and returns its id.
std::string make_image(const ClusterInfo& cluster, const std::string& image) {
  run_command(tool_argv(cluster, "rbd", {"rm", image}));  // a leftover of an interrupted run
  auto made = run_command(
      tool_argv(cluster, "rbd", {"create", image, "--size", "64M", "--image-feature", "layering"}));
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  auto info = run_command(tool_argv(cluster, "rbd", {"info", image, "--format", "json"}));
  REQUIRE(info.exit_code == 0);
  return nlohmann::json::parse(info.out).at("id").get<std::string>();
}

// The probe counts the daemon logged for PID's attaches, in order.
std::vector<int> attach_counts(const std::string& log, pid_t pid) {
  const std::string key = "(pid " + std::to_string(pid) + "): ";
  std::vector<int> out;
  for (std::size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
    const std::size_t from = at + key.size();
    const std::size_t end = log.find(" probes attached", from);
    if (end != std::string::npos && end - from < 6) {
      out.push_back(std::stoi(log.substr(from, end - from)));
    }
  }
  return out;
}

ClientOps client_ops(const Metrics& m, const std::map<std::string, std::string>& match) {
  return {m.sum("cephscope_client_op_seconds_count", match),
          m.sum("cephscope_client_op_seconds_sum", match)};
}

// A 16-thread 4 KiB rados bench write of SECONDS, its output in LOG. rados bench cannot wait
// for the probes: it is held at its first connect() instead. DURING runs while it writes.
HeldBench held_rados_bench(const ClusterInfo& cluster, Daemon& daemon, const std::string& log,
                           int seconds, const std::function<void()>& during) {
  Subprocess bench(held_client(cluster, "rados",
                               {"-p", cluster.pool, "bench", std::to_string(seconds), "write", "-t",
                                "16", "-b", "4096", "--no-cleanup"}),
                   log);
  wait_attached(daemon, "rados");
  HeldBench out;
  out.attached = daemon.scrape();
  if (during) {
    during();
  }
  auto rc = bench.wait(180s);
  INFO("rados bench output:\n" << read_file(log));
  REQUIRE(rc == std::optional<int>(0));
  out.summary = parse_rados_bench(read_file(log));
  out.after = daemon.scrape();
  return out;
}

}  // namespace cephscope::test::rados_e2e
