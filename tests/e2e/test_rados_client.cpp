// e2e (root, live test cluster): the rados collector against real librados clients.
//
//   1. A python3-rados client makes exactly K 4 KiB writes, R 4 KiB reads and one read of a
//      missing object, after the daemon's probes are in it: cephscope_client_op_seconds counts
//      K writes and R + 1 reads under process="python3" and the pool's id, the client layer's
//      bytes are K and R times 4 KiB, and the missing object is one not_found error.
//   2. A 4 KiB write rados bench: its writes plus the one metadata write every run makes
//      equal the histogram's count under process="rados", its average latency agrees within
//      10%, and the client's mean is not below the primary OSDs' mean for the same writes
//      (cephscope_osd_op_seconds, op="write").
//   3. A client that writes right after `import rados`, and one found by discovery only after
//      its last op: every op counted, from the first, before and after the client's exit.
// Figures are printed; the 10% agreement is the only tolerance. The librbd clients are in
// tests/e2e/test_rbd_client.cpp, the helpers in tests/e2e/rados_clients.h.
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

TEST_CASE("a python3-rados client's ops are counted exactly", "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  const fs::path work = fs::path(dir) / "rados-client";

  Daemon daemon(dir, daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));

  std::vector<std::unique_ptr<Subprocess>> clients;
  clients.push_back(start_client(cluster, work, {std::to_string(kWrites), std::to_string(kReads)}));
  wait_attached(daemon, "python3");
  run_clients({work});

  const Metrics m = daemon.scrape();
  const std::map<std::string, std::string> who = {
      {"process", "python3"}, {"pool", pool}, {"pool_id", pool}};
  auto with = [&](const char* op) {
    auto l = who;
    l["op"] = op;
    return l;
  };
  const ClientOps writes = client_ops(m, with("write"));
  const ClientOps reads = client_ops(m, with("read"));
  std::printf("python3: %.0f writes (mean %.2f ms), %.0f reads (mean %.2f ms)\n", writes.count,
              writes.mean() * 1e3, reads.count, reads.mean() * 1e3);
  INFO(daemon.scrape_text());
  CHECK(writes.count == kWrites);
  CHECK(reads.count == kReads + 1);
  CHECK(m.sum("cephscope_client_op_seconds_count", with("other")) == 0);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "python3"}, {"layer", "client"}, {"direction", "write"}}) ==
        kWrites * kOpBytes);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "python3"}, {"layer", "client"}, {"direction", "read"}}) ==
        (kReads + 1) * kOpBytes);
  auto errors = with("read");
  errors["class"] = "not_found";
  CHECK(m.sum("cephscope_client_op_errors_total", errors) == 1);
  CHECK(m.sum("cephscope_client_op_errors_total", {{"process", "python3"}}) == 1);
  CHECK(m.sum("cephscope_client_op_resends_total", {{"process", "python3"}}) == 0);
  // latency is bounded by the test's own wall time and is never zero
  CHECK(writes.mean() > 0);
  CHECK(writes.sum < 120);

  end_clients({work}, clients);
}

// The README's first command: the build tree's daemon with the repository's config file, as it
// is (only the listen address moved to a free loopback port), and a python3-rados client. Both
// run in mount namespaces of their own where /usr/lib/debug is empty (the resolver reads a
// client's debug files through /proc/PID/root, so the client's view is what counts) and the
// daemon's /var/lib/cephscope too: no debug file and no cached profile, so the client's probes
// can come only from the repository's config/profiles, which that config names relative to
// itself.
TEST_CASE("the build tree's daemon with the repository's config counts a client exactly",
          "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.tool_prefix.empty());  // the host's librados, whose profile is shipped
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  const fs::path work = fs::path(dir) / "rados-client";
  const std::string config = std::string(CEPHSCOPE_SOURCE_DIR) + "/config/cephscope.yaml";
  const std::string no_debug_files =
      "mkdir -p /usr/lib/debug && mount -t tmpfs -o size=1m,mode=0755 none /usr/lib/debug";
  auto in_own_namespace = [](const std::string& script) {
    return std::vector<std::string>{
        which("unshare"), "--mount", "--propagation", "private", "sh", "-c", script};
  };
  // The harness appends BINARY --config ITS-FILE ($1 to $3; $0 is the repository's config);
  // its file names the port it chose.
  auto daemon_wrapper = in_own_namespace(
      no_debug_files +
      " && mkdir -p /var/lib/cephscope && mount -t tmpfs -o size=1m,mode=0700 none "
      "/var/lib/cephscope && listen=$(sed -n 's/^listen: \"\\(.*\\)\"$/\\1/p' \"$3\") && "
      "exec \"$1\" --config.file \"$0\" --web.listen-address \"$listen\"");
  daemon_wrapper.push_back(config);
  Daemon daemon(dir, "", daemon_wrapper);
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));

  std::vector<std::unique_ptr<Subprocess>> clients;
  auto client_wrapper = in_own_namespace(no_debug_files + " && exec \"$@\"");
  client_wrapper.emplace_back("sh");
  clients.push_back(
      start_client(cluster, work, {std::to_string(kWrites), "0"}, false, client_wrapper));
  wait_attached(daemon, "python3");
  const std::string who = "rados: python3 (pid " + std::to_string(clients.front()->pid()) + "): ";
  const std::string shipped = std::string(CEPHSCOPE_SOURCE_DIR) + "/config/profiles/";
  CHECK(daemon.log_has(who, 5s));
  const std::string log = daemon.log();
  std::size_t from_shipped = 0;
  for (std::size_t at = log.find(who); at != std::string::npos; at = log.find(who, at + 1)) {
    const std::string line = log.substr(at, log.find('\n', at) - at);
    if (line.find(": profile ") == std::string::npos) {
      continue;
    }
    INFO(line);
    CHECK(line.find(") from " + shipped) != std::string::npos);  // shipped, or memory of it
    ++from_shipped;
  }
  CHECK(from_shipped > 0);
  run_clients({work});

  const Metrics m = daemon.scrape();
  INFO(daemon.scrape_text());
  const ClientOps writes = client_ops(m, {{"process", "python3"}, {"pool", pool}, {"op", "write"}});
  std::printf("the repository's config: %.0f of %d writes counted\n", writes.count, kWrites);
  CHECK(writes.count == kWrites);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "python3"}, {"layer", "client"}, {"direction", "write"}}) ==
        kWrites * kOpBytes);
  end_clients({work}, clients);
}

TEST_CASE("rados bench's writes and latency agree with the client histogram",
          "[e2e][ceph][rados]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  CleanupGuard cleanup{cluster};

  const Metrics before = daemon.scrape();
  const HeldBench bench = held_rados_bench(cluster, daemon, dir + "/rados-bench.log", 8);
  const BenchSummary& s = bench.summary;
  const Metrics& attached = bench.attached;
  const Metrics& after = bench.after;

  const std::map<std::string, std::string> who = {
      {"process", "rados"}, {"pool", pool}, {"op", "write"}};
  const ClientOps c = client_ops(after, who);
  const double osd_count = after.sum("cephscope_osd_op_seconds_count", {{"op", "write"}}) -
                           before.sum("cephscope_osd_op_seconds_count", {{"op", "write"}});
  const double osd_sum = after.sum("cephscope_osd_op_seconds_sum", {{"op", "write"}}) -
                         before.sum("cephscope_osd_op_seconds_sum", {{"op", "write"}});
  std::printf(
      "rados bench: %llu writes + %llu metadata, avg %.3f ms; cephscope: %.0f client writes, "
      "mean %.3f ms (%.1f%% of rados bench's); primary OSDs: %.0f writes, mean %.3f ms\n",
      static_cast<unsigned long long>(s.total_ops),
      static_cast<unsigned long long>(kBenchMetadataOps), s.avg_latency_s * 1e3, c.count,
      c.mean() * 1e3, 100 * c.mean() / s.avg_latency_s, osd_count,
      osd_count > 0 ? osd_sum / osd_count * 1e3 : 0.0);
  // The probes were in before the bench's first write: nothing counted at attach, no finish
  // without its send.
  CHECK(client_ops(attached, who).count == 0);
  CHECK(after.sum("cephscope_events_lost_total", {{"collector", "rados"}}) == 0);
  CHECK(c.count == static_cast<double>(s.total_ops + kBenchMetadataOps));
  CHECK(c.mean() == Approx(s.avg_latency_s).epsilon(0.10));
  REQUIRE(osd_count > 0);
  CHECK(c.mean() >= osd_sum / osd_count);
}

TEST_CASE("ops resent when their OSD is marked down count their resends, once each",
          "[e2e][ceph][rados]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config());
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  CleanupGuard cleanup{cluster};

  const std::map<std::string, std::string> who = {
      {"process", "rados"}, {"pool", pool}, {"op", "write"}};
  // The client retargets the ops it has in flight to osd.0 when the map says it is down, and
  // again when osd.0 (alive) marks itself up.
  const HeldBench bench =
      held_rados_bench(cluster, daemon, dir + "/rados-bench-resend.log", 10, [&] {
        REQUIRE(
            poll_until([&] { return client_ops(daemon.scrape(), who).count >= 200; }, 60s, 100ms)
                .has_value());
        const auto down = run_command(tool_argv(cluster, "ceph", {"osd", "down", "0"}));
        INFO(down.err);
        REQUIRE(down.exit_code == 0);
      });
  const BenchSummary& s = bench.summary;
  const Metrics& after = bench.after;
  // the tests after this one find osd.0 up and every PG active+clean
  const bool settled = poll_until(
                           [&] {
                             const auto entry = osd_map_entry(cluster, 0);
                             return entry && entry->up && pgs_clean(cluster);
                           },
                           180s, 1s)
                           .has_value();
  if (!settled) {
    FAIL("osd.0 not up with every PG active+clean 180 s after the bench:\n"
         << cluster_status(cluster));
  }

  const double resends = after.sum("cephscope_client_op_resends_total", {{"process", "rados"}});
  const ClientOps c = client_ops(after, who);
  std::printf(
      "osd.0 marked down under rados bench: %llu writes + %llu metadata; cephscope: "
      "%.0f client writes, %.0f resends\n",
      static_cast<unsigned long long>(s.total_ops),
      static_cast<unsigned long long>(kBenchMetadataOps), c.count, resends);
  CHECK(resends >= 1);
  CHECK(c.count == static_cast<double>(s.total_ops + kBenchMetadataOps));
  CHECK(after.sum("cephscope_events_lost_total", {{"collector", "rados"}}) == 0);
}

TEST_CASE("a slow client op is recorded on /debug/slow-ops", "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config(false, ", slow_op_threshold: 300ms"));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));

  const fs::path work = fs::path(dir) / "slow-client";
  std::vector<std::unique_ptr<Subprocess>> clients;
  clients.push_back(start_client(cluster, work, {"400", "0"}));
  wait_attached(daemon, "python3");
  // every OSD stopped for 1 s while the client writes: the op in flight waits it out
  std::ofstream(work / "go").close();
  std::this_thread::sleep_for(300ms);
  for (const auto& osd : cluster.osds) {
    ::kill(osd.pid, SIGSTOP);
  }
  std::this_thread::sleep_for(1s);
  for (const auto& osd : cluster.osds) {
    ::kill(osd.pid, SIGCONT);
  }
  const bool done = poll_until([&] { return fs::exists(work / "done"); }, 120s).has_value();
  INFO(read_file((work / "client.log").string()));
  REQUIRE(done);

  int status = 0;
  const auto body = http_get(daemon.port(), "/debug/slow-ops", &status);
  REQUIRE(body.has_value());
  REQUIRE(status == 200);
  const auto doc = nlohmann::json::parse(*body);
  INFO(doc.dump(1));
  const std::string pid = std::to_string(clients[0]->pid());
  int records = 0;
  for (const auto& op : doc.at("ops")) {
    if (op.at("kind") != "client") {
      continue;
    }
    ++records;
    CHECK(op.at("process") == "python3");
    CHECK(std::to_string(op.at("pid").get<long>()) == pid);
    CHECK(op.at("op") == "write");
    CHECK(std::to_string(op.at("pool").get<long>()) == pool);
    CHECK(op.at("pg").get<std::string>().starts_with(pool + "."));
    CHECK(op.at("object").get<std::string>().starts_with("client-" + pid + "-"));
    const int osd = op.at("acting_osd").get<int>();
    CHECK((osd >= 0 && osd < static_cast<int>(cluster.osds.size())));
    CHECK(op.at("seconds").get<double>() >= 0.3);
    CHECK(op.at("seconds").get<double>() < 60);
    CHECK(op.at("error").is_null());
  }
  std::printf("slow client ops recorded: %d\n", records);
  CHECK(records >= 1);
  CHECK(daemon.log_has("rados: slow client op in python3 (pid " + pid + ")", 5s));
  end_clients({work}, clients);
}

// A program that imports rados and works at once (python3-rados, Go bindings dlopen
// librados): it connects and writes 500 objects with no pause in which the daemon could find
// it first. The daemon probes the host's client libraries at start, so the probes are in the
// library when the client maps it; the client's ops are counted under its pid from the first.
TEST_CASE("a client that loads librados and writes at once is counted from its first op",
          "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.tool_prefix.empty());  // the host's librados: the library probed at start
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config(true));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  CHECK(daemon.log_has("rados: host librados.so.2", 30s));

  constexpr int kEagerWrites = 500;
  const fs::path work = fs::path(dir) / "eager-client";
  std::vector<std::unique_ptr<Subprocess>> clients;
  clients.push_back(start_client(cluster, work, {std::to_string(kEagerWrites), "0"}, false,
                                 {"/usr/bin/env", "EAGER=1"}));
  const std::string pid = std::to_string(clients[0]->pid());
  const bool done = poll_until([&] { return fs::exists(work / "done"); }, 120s).has_value();
  INFO(read_file((work / "client.log").string()));
  REQUIRE(done);
  const std::map<std::string, std::string> writes = {
      {"process", "python3"}, {"pid", pid}, {"pool", pool}, {"op", "write"}};
  // Discovery finds the client within its scan interval; its ops are then counted whole.
  poll_until(
      [&] {
        return daemon.scrape().sum("cephscope_client_op_seconds_count", writes) >= kEagerWrites;
      },
      10s, 200ms);
  const Metrics m = daemon.scrape();
  INFO(daemon.scrape_text());
  const double count = m.sum("cephscope_client_op_seconds_count", writes);
  const double bytes = m.sum("cephscope_layer_bytes_total",
                             {{"process", "python3"}, {"layer", "client"}, {"direction", "write"}});
  std::printf(
      "a client writing right after `import rados`: %.0f of %d writes, %.0f of %.0f bytes\n", count,
      kEagerWrites, bytes, kEagerWrites * kOpBytes);
  CHECK(count == kEagerWrites);
  CHECK(bytes == kEagerWrites * kOpBytes);
  CHECK(m.sum("cephscope_client_op_seconds_count",
              {{"process", "python3"}, {"pid", pid}, {"pool", pool}, {"op", "read"}}) == 1);
  CHECK(m.sum("cephscope_events_lost_total", {{"collector", "rados"}}) == 0);
  end_clients({work}, clients);
}

// The same client, but one that imports rados 1.5 s after exec, past the daemon's looks at a
// fresh process (at exec, 100 ms and 1 s after), with a scan every 3 s: the ops it makes before
// the scan finds it fold under its pid alone, and count under its target from then on; after
// it exits they stay (the collector keeps them), so the series never goes back.
TEST_CASE("a client found after its ops keeps them after its exit too",
          "[e2e][ceph][rados][python]") {
  auto loaded = cluster_from_env();
  REQUIRE(loaded.has_value());
  const ClusterInfo cluster = *loaded;
  REQUIRE(cluster.tool_prefix.empty());
  const std::string pool = pool_id(cluster);
  const std::string dir = test_dir(cluster.dir);
  Daemon daemon(dir, daemon_config(false, "", "3s"));
  DaemonLogOnFailure print_log{daemon};
  REQUIRE(daemon.wait_ready(60s));
  CHECK(daemon.log_has("rados: host librados.so.2", 30s));

  constexpr int kWritesFound = 300;
  const fs::path work = fs::path(dir) / "found-late-client";
  std::vector<std::unique_ptr<Subprocess>> clients;
  clients.push_back(start_client(cluster, work, {std::to_string(kWritesFound), "0"}, false,
                                 {"/usr/bin/env", "EAGER=1", "IMPORT_DELAY=1.5"}));
  const std::string pid = std::to_string(clients[0]->pid());
  const bool done = poll_until([&] { return fs::exists(work / "done"); }, 120s).has_value();
  INFO(read_file((work / "client.log").string()));
  REQUIRE(done);
  const bool tracked_before_done = daemon.log_has("tracking pid " + pid + " ", 0s);
  const std::map<std::string, std::string> writes = {
      {"process", "python3"}, {"pool", pool}, {"op", "write"}};
  auto counted = [&] { return daemon.scrape().sum("cephscope_client_op_seconds_count", writes); };
  poll_until([&] { return counted() >= kWritesFound; }, 10s, 200ms);
  const double alive = counted();
  end_clients({work}, clients);
  CHECK(daemon.log_has("pid " + pid + " of python3 exited", 10s));
  std::this_thread::sleep_for(3s);  // the attach worker's detach, and a look at untracked pids
  const Metrics m = daemon.scrape();
  INFO(daemon.scrape_text());
  const double gone = m.sum("cephscope_client_op_seconds_count", writes);
  std::printf(
      "a client found %s its last op: %.0f of %d writes while it ran, %.0f after its exit\n",
      tracked_before_done ? "before" : "after", alive, kWritesFound, gone);
  CHECK(alive == kWritesFound);
  CHECK(gone == kWritesFound);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "python3"}, {"layer", "client"}, {"direction", "write"}}) ==
        kWritesFound * kOpBytes);
  CHECK(m.sum("cephscope_events_lost_total", {{"collector", "rados"}}) == 0);
}
