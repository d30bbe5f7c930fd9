// The endpoint as a scraper and an attacker see it: the HttpServer class with a fake render
// function, on 127.0.0.1, no root and no BPF. curl and openssl are the TLS client and CA.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "support/daemon_runner.h"
#include "support/web_fixture.h"
#include "unit/endpoint_client.h"

using namespace cephscope;
using namespace cephscope::test;
using namespace std::chrono_literals;

namespace {

std::string gunzip(const std::string& gz) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  std::string out(16 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace

TEST_CASE("the endpoint serves /metrics, health, readiness and an index", "[endpoint]") {
  Served s;
  Reply r = ask(s.port, request("GET", "/metrics"));
  CHECK(r.status == 200);
  CHECK(r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(r.headers["content-length"] == std::to_string(fake_metrics().size()));
  CHECK(r.headers.count("content-encoding") == 0);
  CHECK(r.body == fake_metrics());
  CHECK(ask(s.port, request("GET", "/metrics?name[]=x")).status == 200);
  CHECK(ask(s.port, request("GET", "/healthz")).body == "ok\n");
  CHECK(ask(s.port, request("GET", "/readyz")).status == 200);
  s.ready = false;
  CHECK(ask(s.port, request("GET", "/readyz")).status == 503);
  CHECK(ask(s.port, request("GET", "/")).headers["content-type"] == "text/html; charset=utf-8");
  CHECK(ask(s.port, request("GET", "/nope")).status == 404);
  Reply post = ask(s.port, request("POST", "/metrics", "Content-Length: 0\r\n"));
  CHECK(post.status == 405);
  CHECK(post.headers["allow"] == "GET, HEAD");
  CHECK(ask(s.port, "GET /metrics HTTP/9\r\n\r\n").status == 400);
  CHECK(ask(s.port, "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n").status ==
        431);
}

TEST_CASE("a render that throws is answered 500 and the endpoint goes on", "[endpoint]") {
  std::atomic<int> calls = 0;
  Served s({}, {}, [&]() -> std::string {
    if (++calls == 1) {
      throw std::runtime_error("map read failed");
    }
    return "ok 1\n";
  });
  Reply r = ask(s.port, request("GET", "/metrics"));
  CHECK(r.status == 500);
  CHECK(r.body == "scrape failed: map read failed\n");
  CHECK(ask(s.port, request("GET", "/metrics")).body == "ok 1\n");
}

TEST_CASE("a HEAD request gets a GET's headers and no body", "[endpoint]") {
  Served s;
  for (const std::string encoding : {"", "Accept-Encoding: gzip\r\n"}) {
    INFO(encoding);
    Reply get = ask(s.port, request("GET", "/metrics", encoding));
    Reply head = ask(s.port, request("HEAD", "/metrics", encoding));
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(head.headers == get.headers);
    CHECK(head.headers["content-length"] == std::to_string(get.body.size()));
  }
  Reply missing = ask(s.port, request("HEAD", "/nope"));
  CHECK(missing.status == 404);
  CHECK(missing.body.empty());
}

TEST_CASE("responses are gzipped when the client asks", "[endpoint]") {
  Served s;
  Reply gz = ask(s.port, request("GET", "/metrics", "Accept-Encoding: deflate, gzip\r\n"));
  CHECK(gz.status == 200);
  CHECK(gz.headers["content-encoding"] == "gzip");
  CHECK(gz.headers["vary"] == "Accept-Encoding");
  CHECK(gz.headers["content-length"] == std::to_string(gz.body.size()));
  CHECK(gz.body.size() < fake_metrics().size() / 4);
  CHECK(gunzip(gz.body) == fake_metrics());
  std::printf("gzip: %zu bytes of metrics sent as %zu\n", fake_metrics().size(), gz.body.size());

  for (const std::string refused :
       {"", "Accept-Encoding: identity\r\n", "Accept-Encoding: gzip;q=0\r\n"}) {
    INFO(refused);
    Reply plain = ask(s.port, request("GET", "/metrics", refused));
    CHECK(plain.headers.count("content-encoding") == 0);
    CHECK(plain.body == fake_metrics());
  }
  // curl decodes what it asked for.
  const std::string dir = test_dir("/tmp");
  std::string code;
  REQUIRE(run_command("curl -sS --compressed -o " + dir +
                          "/body -w '%{http_code}' http://127.0.0.1:" + std::to_string(s.port) +
                          "/metrics",
                      &code) == 0);
  CHECK(code == "200");
  CHECK(read_text(dir + "/body") == fake_metrics());
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "scrapes keep completing beside 32 half-open connections, which the header timeout "
    "closes",
    "[endpoint]") {
  HttpServer::Options options;
  options.header_timeout = 3s;
  Served s(options);
  const auto first_connect = Clock::now();
  std::vector<int> half_open;
  for (int i = 0; i < 32; ++i) {
    half_open.push_back(connect_local(s.port));
    send_all(half_open.back(), kHalfHead);
  }

  std::vector<double> latency_ms;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    Reply r = ask(s.port, request("GET", "/metrics"));
    latency_ms.push_back(ms_since(t0));
    REQUIRE(r.status == 200);
    REQUIRE(r.body == fake_metrics());
  }
  const auto open_after_scrapes = std::count_if(half_open.begin(), half_open.end(), still_open);
  const double checked_ms = ms_since(first_connect);
  std::sort(latency_ms.begin(), latency_ms.end());
  std::printf(
      "scrape latency beside 32 half-open connections: min %.2f ms, median %.2f ms, max %.2f ms "
      "over %zu scrapes (%zu of the 32 still open %.0f ms after the first connect)\n",
      latency_ms.front(), latency_ms[latency_ms.size() / 2], latency_ms.back(), latency_ms.size(),
      static_cast<std::size_t>(open_after_scrapes), checked_ms);
  // The header timeout runs from each accept, after its connect began: none may be closed
  // before it.
  if (checked_ms < static_cast<double>(options.header_timeout.count())) {
    CHECK(open_after_scrapes == 32);
  }

  // Every one is closed by the server (EOF), none by us, and none before its header timeout;
  // when each was seen closed (not yet closed: -1).
  std::vector<double> closed_ms(half_open.size(), -1);
  const auto give_up = Clock::now() + 30s;
  while (std::count(closed_ms.begin(), closed_ms.end(), -1.0) > 0 && Clock::now() < give_up) {
    std::vector<pollfd> fds;
    fds.reserve(half_open.size());
    for (int fd : half_open) {
      fds.push_back({fd, POLLIN, 0});
    }
    REQUIRE(poll(fds.data(), fds.size(), 100) >= 0);
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (closed_ms[i] < 0 && fds[i].revents != 0) {
        closed_ms[i] = ms_since(first_connect);
        std::array<char, 16> buf{};
        CHECK(recv(half_open[i], buf.data(), buf.size(), MSG_DONTWAIT) <= 0);  // EOF, no reply
      }
    }
  }
  for (std::size_t i = 0; i < half_open.size(); ++i) {
    INFO("half-open connection " << i);
    CHECK(closed_ms[i] >= static_cast<double>(options.header_timeout.count()));
    close(half_open[i]);
  }
  std::printf(
      "the 32 half-open connections were closed by the server %.0f to %.0f ms after the first "
      "connect (header timeout %lld ms)\n",
      *std::min_element(closed_ms.begin(), closed_ms.end()),
      *std::max_element(closed_ms.begin(), closed_ms.end()),
      static_cast<long long>(options.header_timeout.count()));
}

TEST_CASE("a full endpoint closes the connection that has waited longest for its head",
          "[endpoint]") {
  HttpServer::Options options;
  options.max_connections = 8;
  options.header_timeout = 60s;  // only the limit can close them here
  Served s(options);
  std::vector<int> half_open;
  for (int i = 0; i < 8; ++i) {
    half_open.push_back(connect_local(s.port));
    send_all(half_open.back(), kHalfHead);
  }
  std::this_thread::sleep_for(100ms);  // let the server accept them, oldest first
  CHECK(ask(s.port, request("GET", "/metrics")).status == 200);
  CHECK(closed_by_server(half_open.front(), 10s));
  CHECK(still_open(half_open.back()));
  for (int fd : half_open) {
    close(fd);
  }
}

TEST_CASE("a client that does not read its response holds up no other scrape", "[endpoint]") {
  std::string big(16 << 20, 'x');
  HttpServer::Options options;
  options.write_timeout = 2s;
  Served s(options, {}, [&] { return big; });
  const int slow = connect_local(s.port, 4096);
  send_all(slow, request("GET", "/metrics"));
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 5; ++i) {
    Reply r = ask(s.port, request("GET", "/metrics"));
    REQUIRE(r.status == 200);
    REQUIRE(r.body.size() == big.size());
  }
  // After the write timeout the server gives up on it: the slow reader gets less than the body.
  std::this_thread::sleep_for(3s);
  const std::string got = read_to_end(slow, 10s);
  CHECK(got.size() < big.size());
  close(slow);
}

TEST_CASE("basic auth: 401 without or with wrong credentials, 200 with them", "[endpoint][auth]") {
  const std::string dir = test_dir("/tmp");
  write_text(dir + "/web.yml", "basic_auth_users:\n  alice: " + htpasswd_hash("alice", "s3cret") +
                                   "\n  bob: " + htpasswd_hash("bob", "hunter2") + "\n");
  auto web = load_web_config(dir + "/web.yml");
  REQUIRE(web.ok());
  Served s({}, std::move(*web));

  Reply none = ask(s.port, request("GET", "/metrics"));
  CHECK(none.status == 401);
  CHECK(none.headers["www-authenticate"] == "Basic realm=\"cephscope\", charset=\"UTF-8\"");
  CHECK(none.body.find("cephscope_fake_total") == std::string::npos);
  CHECK(ask(s.port, request("GET", "/metrics", basic_header("alice:wrong"))).status == 401);
  CHECK(ask(s.port, request("GET", "/metrics", basic_header("alice:hunter2"))).status == 401);
  CHECK(ask(s.port, request("GET", "/metrics", basic_header("mallory:s3cret"))).status == 401);
  CHECK(ask(s.port, request("GET", "/metrics", "Authorization: Basic !!!\r\n")).status == 401);
  CHECK(ask(s.port, request("HEAD", "/metrics")).status == 401);
  CHECK(ask(s.port, request("GET", "/healthz")).status == 401);

  Reply alice = ask(s.port, request("GET", "/metrics", basic_header("alice:s3cret")));
  CHECK(alice.status == 200);
  CHECK(alice.body == fake_metrics());
  CHECK(ask(s.port, request("GET", "/metrics", basic_header("bob:hunter2"))).status == 200);

  // curl as an operator would use it.
  const std::string url = "http://127.0.0.1:" + std::to_string(s.port) + "/metrics";
  std::string code;
  CHECK(run_command("curl -sS -o /dev/null -w '%{http_code}' " + url, &code) == 0);
  CHECK(code == "401");
  CHECK(run_command("curl -sS -o /dev/null -w '%{http_code}' -u alice:nope " + url, &code) == 0);
  CHECK(code == "401");
  CHECK(run_command("curl -sS -o /dev/null -w '%{http_code}' -u alice:s3cret " + url, &code) == 0);
  CHECK(code == "200");

  // A new web config applies to the next connection.
  write_text(dir + "/web2.yml",
             "basic_auth_users:\n  carol: " + htpasswd_hash("carol", "pw") + "\n");
  auto fresh = load_web_config(dir + "/web2.yml");
  REQUIRE(fresh.ok());
  s.server->set_site(serve(s.routes, std::move(*fresh)));
  CHECK(ask(s.port, request("GET", "/metrics", basic_header("alice:s3cret"))).status == 401);
  CHECK(ask(s.port, request("GET", "/metrics", basic_header("carol:pw"))).status == 200);
  std::filesystem::remove_all(dir);
}

// Slow-op records name objects (tenant data): served to this host's users, or to a client
// the web config's basic auth let in; a peer from elsewhere is refused.
TEST_CASE("/debug/slow-ops: from this host or with basic auth, never to anyone else",
          "[endpoint][auth]") {
  const auto elsewhere = own_address();  // a peer address that is not loopback
  REQUIRE(elsewhere.has_value());
  EndpointSources with_records;
  with_records.slow_ops = [] { return std::string("{\"ops\": []}\n"); };
  const std::string get = request("GET", "/debug/slow-ops");
  {
    Served s(
        {}, {}, [] { return fake_metrics(); }, "0.0.0.0:0", with_records);
    Reply local = ask(s.port, get);
    CHECK(local.status == 200);
    CHECK(local.headers["content-type"] == "application/json");
    CHECK(local.body == "{\"ops\": []}\n");
    const std::string remote = ask_at(*elsewhere, s.port, get);
    CHECK(remote.starts_with("HTTP/1.1 403"));
    CHECK(remote.find("\"ops\"") == std::string::npos);
    CHECK(ask_at(*elsewhere, s.port, request("GET", "/metrics")).starts_with("HTTP/1.1 200"));
  }
  {
    const std::string dir = test_dir("/tmp");
    write_text(dir + "/web.yml",
               "basic_auth_users:\n  alice: " + htpasswd_hash("alice", "s3cret") + "\n");
    auto web = load_web_config(dir + "/web.yml");
    REQUIRE(web.ok());
    Served s(
        {}, std::move(*web), [] { return fake_metrics(); }, "0.0.0.0:0", with_records);
    CHECK(ask_at(*elsewhere, s.port, get).starts_with("HTTP/1.1 401"));
    CHECK(
        ask_at(*elsewhere, s.port, request("GET", "/debug/slow-ops", basic_header("alice:s3cret")))
            .starts_with("HTTP/1.1 200"));
    std::filesystem::remove_all(dir);
  }
  Served without;  // no OSD collector: nothing there
  CHECK(ask(without.port, get).status == 404);
}

// One trace's records: the id checked before it reaches the log, 404 when none is kept.
TEST_CASE("/debug/slow-ops?trace_id=: checked, one trace, or 404", "[endpoint]") {
  EndpointSources with_records;
  with_records.slow_ops = [] { return std::string("{\"ops\": []}\n"); };
  std::string asked;
  with_records.slow_op_trace = [&asked](std::string_view trace) -> std::optional<std::string> {
    asked = trace;
    if (trace != "acb63b09877e4ef8a27ce62ab4ad330b") {
      return std::nullopt;
    }
    return std::string("{\"parts\": []}\n");
  };
  Served s(
      {}, {}, [] { return fake_metrics(); }, "127.0.0.1:0", with_records);
  Reply found =
      ask(s.port, request("GET", "/debug/slow-ops?trace_id=acb63b09877e4ef8a27ce62ab4ad330b"));
  CHECK(found.status == 200);
  CHECK(found.body == "{\"parts\": []}\n");
  CHECK(found.headers["content-type"] == "application/json");
  CHECK(ask(s.port, request("GET", "/debug/slow-ops?trace_id=0123456789abcdef0123456789abcdef"))
            .status == 404);
  asked.clear();
  const std::string valid = "/debug/slow-ops?trace_id=acb63b09877e4ef8a27ce62ab4ad330b";
  for (const std::string& bad :
       {std::string("/debug/slow-ops?trace_id=ACB63B09877E4EF8A27CE62AB4AD330B"),
        std::string("/debug/slow-ops?trace_id=acb63b09"), valid + "&x=1",
        std::string("/debug/slow-ops?span_id=1"),
        valid + "&trace_id=acb63b09877e4ef8a27ce62ab4ad330b"}) {
    INFO(bad);
    CHECK(ask(s.port, request("GET", bad)).status == 400);
  }
  CHECK(asked.empty());  // none of them reached the log
}

// An operator's request for a tier-2 window: POST only, the OSD in the query, checked before
// it reaches the collector; from this host or with basic auth, as the slow-op records.
TEST_CASE("POST /debug/osd-detail: checked, passed on, and refused from elsewhere",
          "[endpoint][auth]") {
  const auto elsewhere = own_address();
  REQUIRE(elsewhere.has_value());
  std::vector<std::pair<std::string, std::string>> asked;
  EndpointSources o;
  o.osd_detail = [&](const std::string& who, const std::string& fsid) {
    asked.emplace_back(who, fsid);
    return std::pair<int, std::string>{who == "osd.7" ? 404 : 200, "answer for " + who + "\n"};
  };
  Served s(
      {}, {}, [] { return fake_metrics(); }, "0.0.0.0:0", o);
  const std::string fsid = "57d4d0a1-f7ba-4367-9b9e-5a4ea4c0d273";
  Reply ok = ask(s.port, request("POST", "/debug/osd-detail?ceph_daemon=osd.3&fsid=" + fsid));
  CHECK(ok.status == 200);
  CHECK(ok.body == "answer for osd.3\n");
  CHECK(ask(s.port, request("POST", "/debug/osd-detail?ceph_daemon=osd.7")).status == 404);
  REQUIRE(asked.size() == 2);
  CHECK(asked[0] == std::pair<std::string, std::string>{"osd.3", fsid});
  CHECK(asked[1] == std::pair<std::string, std::string>{"osd.7", ""});
  Reply get = ask(s.port, request("GET", "/debug/osd-detail?ceph_daemon=osd.3"));
  CHECK(get.status == 405);
  CHECK(get.headers["allow"] == "POST");
  for (const char* bad : {"/debug/osd-detail", "/debug/osd-detail?ceph_daemon=mon.a",
                          "/debug/osd-detail?ceph_daemon=osd.1&fsid=../../etc",
                          "/debug/osd-detail?ceph_daemon=osd.1&x=1"}) {
    INFO(bad);
    CHECK(ask(s.port, request("POST", bad)).status == 400);
  }
  CHECK(
      ask(s.port,
          request("POST", "/debug/osd-detail?ceph_daemon=osd.3", "Content-Length: 4\r\n") + "abcd")
          .status == 400);
  CHECK(ask_at(*elsewhere, s.port, request("POST", "/debug/osd-detail?ceph_daemon=osd.3"))
            .starts_with("HTTP/1.1 403"));
  CHECK(asked.size() == 2);  // none of the refused ones reached the collector
}

TEST_CASE("TLS with a certificate made by openssl, and basic auth inside it", "[endpoint][tls]") {
  const std::string dir = test_dir("/tmp");
  const TestPki pki = make_test_pki(dir);
  write_text(dir + "/web.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
             "basic_auth_users:\n  alice: " +
                 htpasswd_hash("alice", "s3cret") + "\n");
  auto web = load_web_config(dir + "/web.yml");
  REQUIRE(web.ok());
  HttpServer::Options options;
  options.header_timeout = 3s;
  Served s(options, std::move(*web));
  const std::string url = "https://127.0.0.1:" + std::to_string(s.port);
  const std::string curl =
      "curl -sS --max-time 20 --cacert " + pki.ca_cert + " -o " + dir + "/body -w '%{http_code}' ";

  // TCP connections that never start the handshake sit beside the scrapes.
  std::vector<int> half_open;
  half_open.reserve(8);
  for (int i = 0; i < 8; ++i) {
    half_open.push_back(connect_local(s.port));
  }
  std::string out;
  CHECK(run_command(curl + "-u alice:s3cret " + url + "/metrics", &out) == 0);
  CHECK(out == "200");
  CHECK(read_text(dir + "/body") == fake_metrics());
  CHECK(run_command(curl + "-u alice:wrong " + url + "/metrics", &out) == 0);
  CHECK(out == "401");
  CHECK(run_command(curl + "--compressed -u alice:s3cret " + url + "/metrics", &out) == 0);
  CHECK(read_text(dir + "/body") == fake_metrics());
  CHECK(run_command(curl + "-I -u alice:s3cret " + url + "/metrics", &out) == 0);
  CHECK(out == "200");
  // The client checks the server: a CA it does not know fails the handshake.
  CHECK(run_command("curl -sS --max-time 20 --cacert " + pki.stranger_cert + " " + url + "/metrics",
                    &out) != 0);
  // Plain HTTP to the TLS port gets no HTTP answer.
  CHECK(ask(s.port, request("GET", "/metrics")).status == 0);
  for (int fd : half_open) {
    CHECK(closed_by_server(fd, 30s));
    close(fd);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("TLS client certificates and the minimum version", "[endpoint][tls]") {
  const std::string dir = test_dir("/tmp");
  const TestPki pki = make_test_pki(dir);
  write_text(dir + "/web.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
             "  client_ca_file: ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n"
             "  min_version: TLS13\n");
  auto web = load_web_config(dir + "/web.yml");
  REQUIRE(web.ok());
  Served s({}, std::move(*web));
  const std::string curl =
      "curl -sS --max-time 20 --cacert " + pki.ca_cert + " -o /dev/null -w '%{http_code}' ";
  const std::string url = " https://127.0.0.1:" + std::to_string(s.port) + "/metrics";
  const std::string client = "--cert " + pki.client_cert + " --key " + pki.client_key;
  std::string out;
  CHECK(run_command(curl + client + url, &out) == 0);
  CHECK(out == "200");
  CHECK(run_command(curl + url, &out) != 0);  // no client certificate
  CHECK(run_command(curl + "--cert " + pki.stranger_cert + " --key " + pki.stranger_key + url,
                    &out) != 0);  // one from a CA the server does not trust
  CHECK(run_command(curl + client + " --tls-max 1.2" + url, &out) != 0);  // below TLS13
  std::filesystem::remove_all(dir);
}
