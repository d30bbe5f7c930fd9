// e2e (root, live test cluster): the rados collector against librbd clients.
//
//   1. rbd bench (librbd) making 1024 4 KiB writes to an image of the pool: counted under
//      process="rbd" and the pool, the client layer's write bytes exactly 1024 times 4 KiB
//      (librbd's own metadata ops, object-map updates and the lock, carry no data).
//   2. With collectors.rados.instance_labels: two rbd images written by one python3 process
//      count exactly under their image ids, and two python3 processes' ops exactly under
//      their pids.
//   3. A client that loads librbd after the probes are in its librados: probed there too.
// Built into test_rados_client (tests/e2e/test_rados_client.cpp has the librados clients).
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rados_clients.h"

using namespace cephscope::test;
using namespace cephscope::test::rados_e2e;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST_CASE("an rbd bench's writes are counted under its pool", "[e2e][ceph][rados]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  const std::string image = cluster.pool + "/cephscope-rbd-test";
  // made before the daemon starts: its rbd process is not the bench's
  auto made = run_command(tool_argv(cluster, "rbd", {"create", image, "--size", "64M"}));
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  struct RemoveImage {
    std::vector<std::string> argv;
    explicit RemoveImage(std::vector<std::string> a) : argv(std::move(a)) {}
    RemoveImage(const RemoveImage&) = delete;
    RemoveImage& operator=(const RemoveImage&) = delete;
    ~RemoveImage() { run_command(argv); }
  } remove{tool_argv(cluster, "rbd", {"rm", image})};

  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  constexpr int kOps = 1024;
  const std::string log = dir + "/rbd-bench.log";
  Subprocess bench(held_client(cluster, "rbd",
                               {"bench", "--io-type", "write", "--io-size", "4096", "--io-total",
                                std::to_string(kOps * 4096), "--io-threads", "4", "--io-pattern",
                                "rand", image}),
                   log);
  wait_attached(daemon, "rbd");
  REQUIRE(bench.wait(120s) == std::optional<int>(0));
  const Metrics m = daemon.scrape();
  const std::map<std::string, std::string> who = {
      {"process", "rbd"}, {"pool", pool}, {"op", "write"}};
  const ClientOps writes = client_ops(m, who);
  const double bytes = m.sum("cephscope_layer_bytes_total",
                             {{"process", "rbd"}, {"layer", "client"}, {"direction", "write"}});
  std::printf(
      "rbd bench: %d writes; cephscope: %.0f client writes (mean %.2f ms), %.0f other, "
      "%.0f read, %.0f bytes written\n",
      kOps, writes.count, writes.mean() * 1e3,
      m.sum("cephscope_client_op_seconds_count", {{"process", "rbd"}, {"op", "other"}}),
      m.sum("cephscope_client_op_seconds_count", {{"process", "rbd"}, {"op", "read"}}), bytes);
  INFO(read_file(log));
  std::string lost;
  for (const auto& sample : m.find("cephscope_events_lost_total", {{"collector", "rados"}})) {
    lost += " " + sample.labels.at("reason") + "=" + std::to_string(sample.value);
  }
  INFO("events lost:" << lost);
  // The bytes are exact; the op count is not: librbd's cache can merge two adjacent random
  // writes into one OSD op (1,023 ops for 1,024 writes seen), and a write to a new object can
  // carry an extra op.
  CHECK(bytes == kOps * kOpBytes);
  CHECK(writes.count >= kOps * 0.9);
  CHECK(writes.count <= kOps * 1.1);
  CHECK(m.sum("cephscope_events_lost_total", {{"collector", "rados"}}) == 0);
}

TEST_CASE("instance labels: two rbd images of one process, two processes of one name",
          "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  // names of this run: a killed client's watch keeps an image from removal for 30 s
  const std::string run = std::to_string(::getpid());
  const std::string a = "cephscope-image-a-" + run;
  const std::string b = "cephscope-image-b-" + run;
  const std::string id_a = make_image(cluster, cluster.pool + "/" + a);
  const std::string id_b = make_image(cluster, cluster.pool + "/" + b);
  RemoveImages remove{cluster, {cluster.pool + "/" + a, cluster.pool + "/" + b}};
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config(true));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));

  // one process writing two images; two more of the same name making plain object ops
  const std::vector<fs::path> works = {fs::path(dir) / "rbd-client", fs::path(dir) / "client-1",
                                       fs::path(dir) / "client-2"};
  std::vector<std::unique_ptr<Subprocess>> clients;
  clients.push_back(start_client(cluster, works[0], {a + "=40", b + "=25"}));
  clients.push_back(start_client(cluster, works[1], {"30", "10"}));
  clients.push_back(start_client(cluster, works[2], {"50", "0"}));
  for (const auto& c : clients) {
    const std::string line = "rados: python3 (pid " + std::to_string(c->pid()) + "): ";
    REQUIRE(daemon.log_has(line, 60s));
  }
  run_clients(works);

  const Metrics m = daemon.scrape();
  INFO(daemon.scrape_text());
  auto count = [&](std::map<std::string, std::string> match) {
    match["process"] = "python3";
    match["pool"] = pool;
    return m.sum("cephscope_client_op_seconds_count", match);
  };
  const std::string p1 = std::to_string(clients[1]->pid());
  const std::string p2 = std::to_string(clients[2]->pid());
  std::printf(
      "image %s: %.0f writes, image %s: %.0f writes; pid %s: %.0f writes %.0f reads, "
      "pid %s: %.0f writes %.0f reads\n",
      id_a.c_str(), count({{"image", id_a}, {"op", "write"}}), id_b.c_str(),
      count({{"image", id_b}, {"op", "write"}}), p1.c_str(), count({{"pid", p1}, {"op", "write"}}),
      count({{"pid", p1}, {"op", "read"}}), p2.c_str(), count({{"pid", p2}, {"op", "write"}}),
      count({{"pid", p2}, {"op", "read"}}));
  CHECK(count({{"image", id_a}, {"op", "write"}}) == 40);
  CHECK(count({{"image", id_b}, {"op", "write"}}) == 25);
  CHECK(count({{"pid", p1}, {"op", "write"}}) == 30);
  CHECK(count({{"pid", p1}, {"op", "read"}}) == 11);
  CHECK(count({{"pid", p2}, {"op", "write"}}) == 50);
  CHECK(count({{"pid", p2}, {"op", "read"}}) == 1);
  // every series carries an image or a pid
  for (const auto& sample : m.find("cephscope_client_op_seconds_count", {{"process", "python3"}})) {
    CHECK((sample.labels.contains("image") || sample.labels.contains("pid")));
  }
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "python3"}, {"layer", "client"}, {"direction", "write"}}) ==
        (40 + 25 + 30 + 50) * kOpBytes);
  end_clients(works, clients);
}

TEST_CASE("a client that loads librbd after the probes are in is probed there too",
          "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  const std::string image = "cephscope-image-late-" + std::to_string(::getpid());
  const std::string id = make_image(cluster, cluster.pool + "/" + image);
  RemoveImages remove{cluster, {cluster.pool + "/" + image}};
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config(true));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));

  const fs::path work = fs::path(dir) / "late-client";
  std::vector<std::unique_ptr<Subprocess>> clients;
  clients.push_back(start_client(cluster, work, {image + "=20"}, true));
  const pid_t pid = clients[0]->pid();
  REQUIRE(poll_until([&] { return !attach_counts(daemon.log(), pid).empty(); }, 60s));
  const int first = attach_counts(daemon.log(), pid).front();
  std::ofstream(work / "go").close();  // librbd is loaded now
  REQUIRE(poll_until([&] { return fs::exists(work / "loaded"); }, 60s));
  // the daemon's periodic look at its clients' libraries attaches librbd's copy
  const auto took =
      poll_until([&] { return attach_counts(daemon.log(), pid).back() > first; }, 30s);
  INFO(daemon.log());
  REQUIRE(took.has_value());
  std::printf("probes in the client: %d, then %d after librbd was loaded (%.1f s)\n", first,
              attach_counts(daemon.log(), pid).back(), *took);
  std::ofstream(work / "go2").close();
  const bool done = poll_until([&] { return fs::exists(work / "done"); }, 120s).has_value();
  INFO(read_file((work / "client.log").string()));
  REQUIRE(done);
  const Metrics m = daemon.scrape();
  CHECK(m.sum("cephscope_client_op_seconds_count",
              {{"process", "python3"}, {"image", id}, {"pool", pool}, {"op", "write"}}) == 20);
  CHECK(m.sum("cephscope_events_lost_total", {{"collector", "rados"}}) == 0);
  end_clients({work}, clients);
}
