// The web config file (exporter toolkit format): every error names its key and line, paths
// are checked readable, and the bcrypt check accepts what htpasswd -B makes.
#include <catch2/catch.hpp>

#include <filesystem>

#include "endpoint/basic_auth.h"
#include "endpoint/web_config.h"
#include "support/daemon_runner.h"
#include "support/web_fixture.h"
#include "unit/endpoint_client.h"

using namespace cephscope;
using namespace cephscope::test;

namespace {

// The error parse_web_config gives for `yaml`, read as `web.yml` in `dir`.
std::string web_error(const std::string& yaml, const std::string& dir = "/nonexistent") {
  auto r = parse_web_config(yaml, "web.yml", dir);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

std::string basic(const std::string& credentials) {
  return "Basic " + test::base64(credentials);
}

}  // namespace

TEST_CASE("an empty web config means plain HTTP without authentication", "[web_config]") {
  auto r = parse_web_config("", "web.yml", "/");
  REQUIRE(r.ok());
  CHECK_FALSE(r->tls);
  CHECK(r->basic_auth_users.empty());
  auto none = load_web_config("");
  REQUIRE(none.ok());
  CHECK(none->tls == nullptr);
  CHECK_FALSE(none->auth.enabled());
  CHECK(none->summary() == "plain HTTP, no authentication");
}

TEST_CASE("web config paths are taken from the file's directory and checked", "[web_config]") {
  const std::string dir = test_dir("/tmp");
  write_text(dir + "/server.pem", "x");
  write_text(dir + "/server.key", "x");
  write_text(dir + "/ca.pem", "x");
  auto r = parse_web_config(
      "tls_server_config:\n"
      "  cert_file: server.pem\n"
      "  key_file: " +
          dir +
          "/server.key\n"
          "  client_ca_file: ca.pem\n"
          "  client_auth_type: RequireAndVerifyClientCert\n"
          "  min_version: TLS13\n",
      "web.yml", dir);
  REQUIRE(r.ok());
  REQUIRE(r->tls);
  CHECK(r->tls->cert_file == dir + "/server.pem");
  CHECK(r->tls->key_file == dir + "/server.key");
  CHECK(r->tls->client_ca_file == dir + "/ca.pem");
  CHECK(r->tls->client_auth == ClientAuth::kRequireAndVerifyClientCert);
  CHECK(r->tls->min_version == TlsVersion::kTls13);
  CHECK_FALSE(r->tls->max_version);

  CHECK(web_error("tls_server_config:\n  cert_file: missing.pem\n  key_file: server.key\n", dir) ==
        "web.yml:2: tls_server_config.cert_file: cannot read " + dir +
            "/missing.pem: No such file or directory");
  CHECK(web_error("tls_server_config:\n  cert_file: server.pem\n  key_file: .\n", dir) ==
        "web.yml:3: tls_server_config.key_file: " + dir + "/. is not a file");
  std::filesystem::remove_all(dir);
}

TEST_CASE("web config errors name the key and the line", "[web_config]") {
  CHECK(web_error("basic_auth_users: {}\ntls_server_confg: {}\n") ==
        "web.yml:2: tls_server_confg: unknown key");
  CHECK(web_error("tls_server_config:\n  certfile: a\n") ==
        "web.yml:2: tls_server_config.certfile: unknown key");
  CHECK(web_error("http_server_config:\n  http2: false\n") ==
        "web.yml:1: http_server_config: not supported by cephscope");
  CHECK(web_error("tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n") ==
        "web.yml:2: tls_server_config.cipher_suites: not supported by cephscope");
  CHECK(web_error("tls_server_config:\n  key_file: a\n") ==
        "web.yml:2: tls_server_config: missing cert_file");
  CHECK(web_error("tls_server_config: yes\n") ==
        "web.yml:1: tls_server_config: expected a mapping");
  CHECK(web_error("basic_auth_users:\n  alice: secret\n") ==
        "web.yml:2: basic_auth_users.alice: not a bcrypt hash ($2y$..., as `htpasswd -nBC 10 "
        "alice` prints after the colon)");
  CHECK(web_error("- a\n") == "web.yml:1: (top level): expected a mapping");
  CHECK(web_error("basic_auth_users: {a: [b\n").starts_with("web.yml:"));
  CHECK(web_error("basic_auth_users: {a: [b\n").find("not valid YAML") != std::string::npos);
}

TEST_CASE("web config TLS policies and versions are checked", "[web_config]") {
  const std::string dir = test_dir("/tmp");
  for (const char* f : {"/c.pem", "/k.pem", "/ca.pem"}) {
    write_text(dir + f, "x");
  }
  const std::string files = "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n";
  CHECK(web_error(files + "  client_auth_type: Always\n", dir) ==
        "web.yml:4: tls_server_config.client_auth_type: unknown policy 'Always' (NoClientCert, "
        "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, "
        "RequireAndVerifyClientCert)");
  CHECK(web_error(files + "  client_auth_type: VerifyClientCertIfGiven\n", dir) ==
        "web.yml:4: tls_server_config.client_auth_type: VerifyClientCertIfGiven needs "
        "client_ca_file");
  CHECK(web_error(files + "  client_ca_file: ca.pem\n", dir) ==
        "web.yml:4: tls_server_config.client_ca_file: set, but client_auth_type asks for no "
        "client certificate (use RequireAndVerifyClientCert)");
  CHECK(web_error(files + "  min_version: TLS1.2\n", dir) ==
        "web.yml:4: tls_server_config.min_version: unknown TLS version 'TLS1.2' (TLS10, TLS11, "
        "TLS12, TLS13)");
  CHECK(web_error(files + "  min_version: TLS13\n  max_version: TLS12\n", dir) ==
        "web.yml:5: tls_server_config.max_version: below min_version TLS13");
  auto any = parse_web_config(files + "  client_auth_type: RequireAnyClientCert\n", "w", dir);
  REQUIRE(any.ok());
  CHECK(any->tls->client_auth == ClientAuth::kRequireAnyClientCert);
  CHECK(any->tls->min_version == TlsVersion::kTls12);  // the toolkit's default
  std::filesystem::remove_all(dir);
}

TEST_CASE("web config users need bcrypt hashes, once each, and names without ':'", "[web_config]") {
  const std::string hash = htpasswd_hash("alice", "s3cret");
  auto r = parse_web_config("basic_auth_users:\n  alice: " + hash + "\n", "web.yml", "/");
  REQUIRE(r.ok());
  CHECK(r->basic_auth_users.at("alice") == hash);
  CHECK(web_error("basic_auth_users:\n  alice: " + hash + "\n  alice: " + hash + "\n") ==
        "web.yml:3: basic_auth_users.alice: listed twice");
  CHECK(web_error("basic_auth_users:\n  \"a:b\": " + hash + "\n") ==
        "web.yml:2: basic_auth_users.a:b: a user name must be non-empty and have no ':'");
}

TEST_CASE("load_web_config loads the certificates and says what it enforces", "[web_config]") {
  const std::string dir = test_dir("/tmp");
  const TestPki pki = make_test_pki(dir);
  const std::string hash = htpasswd_hash("alice", "s3cret");
  write_text(dir + "/web.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
             "basic_auth_users:\n  alice: " +
                 hash + "\n");
  auto web = load_web_config(dir + "/web.yml");
  REQUIRE(web.ok());
  CHECK(web->tls != nullptr);
  CHECK(web->auth.enabled());
  CHECK(web->summary() ==
        "TLS (min TLS12, client certificates NoClientCert), basic auth (1 users)");

  write_text(dir + "/mismatch.yml",
             "tls_server_config:\n  cert_file: server.pem\n  key_file: client.key\n");
  auto mismatch = load_web_config(dir + "/mismatch.yml");
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().message.starts_with(dir + "/mismatch.yml: tls_server_config: key_file " +
                                             pki.client_key + " does not match cert_file " +
                                             pki.server_cert));
  write_text(dir + "/garbage.yml",
             "tls_server_config:\n  cert_file: garbage.yml\n  key_file: server.key\n");
  auto garbage = load_web_config(dir + "/garbage.yml");
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().message.find("cert_file " + dir + "/garbage.yml: not a PEM certificate") !=
        std::string::npos);
  auto missing = load_web_config(dir + "/none.yml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == dir +
                                       "/none.yml: cannot read the web config file: No such "
                                       "file or directory");
  std::filesystem::remove_all(dir);
}

TEST_CASE("bcrypt hashes from htpasswd check the password", "[web_config][auth]") {
  const std::string hash = htpasswd_hash("alice", "s3cret");
  CHECK(hash.starts_with("$2y$05$"));
  CHECK(is_bcrypt_hash(hash));
  CHECK(verify_password("s3cret", hash));
  CHECK_FALSE(verify_password("s3cret ", hash));
  CHECK_FALSE(verify_password("", hash));
  // $2b$ is the same algorithm under the name OpenBSD and Python's bcrypt give it.
  const std::string b = "$2b$" + hash.substr(4);
  CHECK(is_bcrypt_hash(b));
  CHECK(verify_password("s3cret", b));
  CHECK_FALSE(is_bcrypt_hash("$2y$03$" + hash.substr(7)));  // cost below 4
  CHECK_FALSE(is_bcrypt_hash(hash.substr(0, 59)));
  CHECK_FALSE(is_bcrypt_hash("$1$salt$hash"));
  CHECK_FALSE(verify_password("x", "not a hash"));
}

TEST_CASE("basic auth takes the right user and password and nothing else", "[web_config][auth]") {
  const BasicAuth open;
  CHECK_FALSE(open.enabled());
  CHECK(open.check(""));

  const BasicAuth auth(
      {{"alice", htpasswd_hash("alice", "s3cret")}, {"bob", htpasswd_hash("bob", "pa:ss word")}});
  CHECK(auth.enabled());
  CHECK(auth.check(basic("alice:s3cret")));
  CHECK(auth.check(basic("bob:pa:ss word")));  // the password may hold ':' and spaces
  CHECK(auth.check("basic " + basic("alice:s3cret").substr(6)));  // the scheme is case-blind
  CHECK_FALSE(auth.check(""));
  CHECK_FALSE(auth.check(basic("alice:wrong")));
  CHECK_FALSE(auth.check(basic("alice:")));
  CHECK_FALSE(auth.check(basic("bob:s3cret")));
  CHECK_FALSE(auth.check(basic("carol:s3cret")));
  CHECK_FALSE(auth.check(basic("alices3cret")));
  CHECK_FALSE(auth.check("Bearer " + basic("alice:s3cret").substr(6)));
  CHECK_FALSE(auth.check("Basic not*base64"));
  CHECK_FALSE(auth.check("Basic"));
}

TEST_CASE("base64 decodes RFC 4648's vectors and refuses the rest", "[web_config][auth]") {
  std::string out;
  for (const auto& [in, want] :
       std::vector<std::pair<std::string, std::string>>{{"", ""},
                                                        {"Zg==", "f"},
                                                        {"Zm8=", "fo"},
                                                        {"Zm9v", "foo"},
                                                        {"Zm9vYg==", "foob"},
                                                        {"Zm9vYmE=", "fooba"},
                                                        {"Zm9vYmFy", "foobar"}}) {
    CHECK(base64_decode(in, out));
    CHECK(out == want);
  }
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zg==Zg==", "Zm9v!", "Zm=v"}) {
    CHECK_FALSE(base64_decode(bad, out));
  }
}

TEST_CASE("a bad web config stops the daemon with status 2 before it loads anything",
          "[web_config][cli]") {
  const std::string dir = test_dir("/tmp");
  write_text(dir + "/cephscope.yaml", "web_config_file: " + dir + "/web.yml\n");
  write_text(dir + "/web.yml", "tls_server_config:\n  cert_file: none.pem\n  key_file: none.key\n");
  std::string out;
  CHECK(run_command(daemon_binary() + " --config " + dir + "/cephscope.yaml", &out) == 2);
  CHECK(out == "cephscope: " + dir + "/web.yml:2: tls_server_config.cert_file: cannot read " + dir +
                   "/none.pem: No such file or directory\n");
  write_text(dir + "/other.yml", "basic_auth_users:\n  alice: plain\n");
  CHECK(run_command(daemon_binary() + " --check --config " + dir + "/cephscope.yaml" +
                        " --web.config.file " + dir + "/other.yml",
                    &out) == 2);
  CHECK(out.find("other.yml:2: basic_auth_users.alice: not a bcrypt hash") != std::string::npos);
  write_text(dir + "/relative.yaml", "web_config_file: web.yml\n");
  CHECK(run_command(daemon_binary() + " --config " + dir + "/relative.yaml", &out) == 2);
  CHECK(out == "cephscope: " + dir +
                   "/relative.yaml:1: web_config_file: expected an absolute path, got 'web.yml'\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the web config in docs/operations.md parses, and its hash is the password it names",
          "[web_config]") {
  const std::string doc = read_text(std::string(CEPHSCOPE_SOURCE_DIR) + "/docs/operations.md");
  const auto start = doc.find("```yaml\n# /etc/cephscope/web.yml\n");
  REQUIRE(start != std::string::npos);
  const auto body = start + std::string("```yaml\n").size();
  const std::string yaml = doc.substr(body, doc.find("```", body) - body);
  const std::string dir = test_dir("/tmp");
  write_text(dir + "/cephscope.crt", "x");
  write_text(dir + "/cephscope.key", "x");
  auto r = parse_web_config(yaml, "operations.md", dir);
  REQUIRE(r.ok());
  REQUIRE(r->tls);
  CHECK(r->tls->min_version == TlsVersion::kTls12);
  CHECK(verify_password("example", r->basic_auth_users.at("prometheus")));
  std::filesystem::remove_all(dir);
}
