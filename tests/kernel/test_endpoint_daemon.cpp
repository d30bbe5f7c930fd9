// The daemon's endpoint as an operator secures it: the web config named in the config file
// gives TLS and basic auth from the start, SIGHUP swaps it, a bad one is rejected.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "support/daemon_runner.h"
#include "support/web_fixture.h"

using namespace cephscope::test;

namespace {

// curl's status code for `url`, "000" when no HTTP answer came.
std::string curl_status(const std::string& options, const std::string& url) {
  std::string out;
  run_command("curl -sS --max-time 10 -o /dev/null -w '%{http_code}' " + options + " " + url, &out);
  return out.substr(out.size() >= 3 ? out.size() - 3 : 0);
}

bool wait_for(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("the daemon serves TLS and basic auth from its web config and reloads it on SIGHUP",
          "[kernel][endpoint]") {
  const std::string dir = test_dir("/tmp");
  const TestPki pki = make_test_pki(dir);
  write_text(dir + "/web.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
             "basic_auth_users:\n  alice: " +
                 htpasswd_hash("alice", "s3cret") + "\n");
  Daemon daemon(dir, "web_config_file: " + dir + "/web.yml\n");
  DaemonLogOnFailure show_log(daemon);
  const std::string port = std::to_string(daemon.port());
  const std::string https = "https://127.0.0.1:" + port;
  const std::string tls = "--cacert " + pki.ca_cert;
  REQUIRE(
      wait_for([&] { return curl_status(tls + " -u alice:s3cret", https + "/readyz") == "200"; },
               std::chrono::seconds(30)));
  CHECK(daemon.log().find("TLS (min TLS12, client certificates NoClientCert), basic auth (1 "
                          "users)") != std::string::npos);
  CHECK(curl_status(tls + " -u alice:s3cret", https + "/metrics") == "200");
  CHECK(curl_status(tls, https + "/metrics") == "401");
  CHECK(curl_status(tls + " -u alice:wrong", https + "/metrics") == "401");
  CHECK(curl_status("", "http://127.0.0.1:" + port + "/metrics") == "000");

  // SIGHUP: another file, plain HTTP with another user.
  write_text(dir + "/web.yml",
             "basic_auth_users:\n  carol: " + htpasswd_hash("carol", "pw") + "\n");
  kill(daemon.pid(), SIGHUP);
  const std::string http = "http://127.0.0.1:" + port + "/metrics";
  REQUIRE(wait_for([&] { return curl_status("-u carol:pw", http) == "200"; },
                   std::chrono::seconds(10)));
  CHECK(curl_status("-u alice:s3cret", http) == "401");

  // A bad web config at SIGHUP is rejected and the running one stays.
  write_text(dir + "/web.yml", "basic_auth_users:\n  carol: pw\n");
  kill(daemon.pid(), SIGHUP);
  REQUIRE(wait_for(
      [&] {
        return daemon.log().find("basic_auth_users.carol: not a bcrypt hash") != std::string::npos;
      },
      std::chrono::seconds(10)));
  CHECK(daemon.log().find("reload rejected") != std::string::npos);
  CHECK(curl_status("-u carol:pw", http) == "200");
  CHECK(daemon.stop() == 0);
  std::filesystem::remove_all(dir);
}
