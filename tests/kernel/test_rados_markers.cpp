// Ceph's markers first: a librados build that carries the proposed Objecter markers
// (objecter_send_op, objecter_finish_op) is measured through them, with no debug info and no
// Objecter symbol, by the real daemon. The stand-in library (objecter_markers.cpp) fires each
// marker only while its semaphore is raised, as Ceph's conditional tracepoints do.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/daemon_runner.h"

using namespace cephscope::test;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE(
    "a client library with Ceph's Objecter markers is measured through them, exactly and "
    "without debug info",
    "[rados][markers]") {
  const std::string dir = test_dir("/tmp/cephscope-rados-markers");
  Daemon daemon(dir,
                "discovery: {scan_interval: 1s}\n"
                "collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: "
                "false}, osd: {enabled: false}, kclient: {enabled: false}, rados: "
                "{slow_op_threshold: 100ms}}\n"
                "profiles: {cache_dir: " +
                    dir + "/cache}\n");
  DaemonLogOnFailure show_log(daemon);
  REQUIRE(daemon.wait_ready());
  const std::string go = dir + "/go";
  std::filesystem::remove(go);
  Subprocess client({CEPHSCOPE_OBJECTER_CLIENT, go}, dir + "/client.out");
  const std::map<std::string, std::string> rados = {{"collector", "rados"},
                                                    {"target", "objecter_client"}};
  auto status = [&](const Metrics& m, const std::string& probe) {
    auto labels = rados;
    labels["probe"] = probe;
    return m.find("cephscope_probe_attached", labels);
  };
  const bool attached = eventually(
      [&] {
        auto m = daemon.scrape();
        return m.sum("cephscope_probe_attached", {{"collector", "rados"},
                                                  {"probe", "objecter:objecter_send_op"},
                                                  {"reason", "ok"}}) == 1 &&
               m.sum("cephscope_probe_attached", {{"collector", "rados"},
                                                  {"probe", "objecter:objecter_finish_op"},
                                                  {"reason", "ok"}}) == 1;
      },
      std::chrono::seconds(60));
  INFO("the client's output: " << read_all(dir + "/client.out"));
  REQUIRE(attached);
  const auto before = daemon.scrape();
  // The markers carry send and finish: their functions are not looked for. The reply, which
  // no marker carries, says why it is missing (no Objecter in this library).
  CHECK(status(before, "Objecter::_send_op").empty());
  CHECK(status(before, "Objecter::_finish_op").empty());
  const auto reply = status(before, "Objecter::handle_osd_op_reply");
  REQUIRE(reply.size() == 1);
  CHECK(reply[0].labels.at("reason") == "symbol_not_found");
  CHECK(
      daemon.log_has("send and finish at markers objecter:objecter_send_op, "
                     "objecter:objecter_finish_op (2 sites, no debug info needed)",
                     std::chrono::seconds(1)));

  // `profile show` says which stage goes where, as the collector plans it
  const std::string shown = dir + "/profile-show.out";
  REQUIRE(run_command(daemon_binary() + " profile show --pid " + std::to_string(client.pid()) +
                      " --module librados.so.2 --cache-dir " + dir +
                      "/show-cache --no-cache-write > " + shown + " 2>&1") == 0);
  const std::string show = read_all(shown);
  INFO(show);
  CHECK(show.find("marker objecter:objecter_send_op at 0x") != std::string::npos);
  CHECK(show.find("marker objecter:objecter_finish_op at 0x") != std::string::npos);
  CHECK(show.find("Objecter::handle_osd_op_reply        unavailable (symbol_not_found)") !=
        std::string::npos);

  std::ofstream(go) << "go\n";
  REQUIRE(
      eventually([&] { return read_all(dir + "/client.out").find("done") != std::string::npos; },
                 std::chrono::seconds(60)));
  const std::string out = read_all(dir + "/client.out");
  INFO(out);
  // every send and finish fired its marker: the kernel raised both semaphores
  CHECK(out.find("ops 321 sends 322 fired 322 finishes 321") != std::string::npos);

  const auto m = daemon.scrape();
  auto ops = [&](const std::string& op) {
    return m.sum("cephscope_client_op_seconds_count",
                 {{"process", "objecter_client"}, {"op", op}, {"pool", "unknown"}});
  };
  CHECK(ops("write") == 200);
  CHECK(ops("read") == 100);
  CHECK(ops("other") == 21);  // 20 that move no data, and the long one
  CHECK(m.sum("cephscope_client_op_resends_total", {{"process", "objecter_client"}}) == 1);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "objecter_client"}, {"layer", "client"}, {"direction", "write"}}) ==
        200.0 * 4096);
  CHECK(m.sum("cephscope_layer_bytes_total",
              {{"process", "objecter_client"}, {"layer", "client"}, {"direction", "read"}}) ==
        100.0 * 8192);
  // each op waited at least 1 ms between send and finish, one 0.3 s
  const double seconds = m.sum("cephscope_client_op_seconds_sum", {{"process", "objecter_client"}});
  CHECK(seconds >= 320 * 0.001 + 0.3);
  CHECK(seconds < 60);

  // The slow op's record: its tid, and no pool or object (the finish marker names neither).
  int code = 0;
  const auto body = http_get(daemon.port(), "/debug/slow-ops", &code);
  REQUIRE(body.has_value());
  REQUIRE(code == 200);
  const auto doc = nlohmann::json::parse(*body);
  INFO(doc.dump(1));
  // Other ops may be records too on a loaded host (a 1 ms op that waited for a CPU), and
  // other librados clients of the host have theirs: the slow op must be there, as written.
  bool found = false;
  for (const auto& op : doc.at("ops")) {
    if (op.at("kind") != "client" || op.at("process") != "objecter_client") {
      continue;
    }
    CHECK(op.at("pool").is_null());
    CHECK(op.at("seconds").get<double>() >= 0.1);
    if (op.at("tid") == 100) {
      found = true;
      CHECK(op.at("op") == "write");
      CHECK(op.at("seconds").get<double>() >= 0.3);
    }
  }
  CHECK(found);
}
