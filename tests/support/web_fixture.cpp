#include "support/web_fixture.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/subprocess.h"

namespace cephscope::test {
namespace {

void run_or_throw(const std::string& command) {
  std::string out;
  if (run_command(command, &out) != 0) {
    throw std::runtime_error("failed: " + command + "\n" + out);
  }
}

}  // namespace

std::string htpasswd_hash(const std::string& user, const std::string& password) {
  std::string out;
  if (run_command("htpasswd -nbB -C 5 '" + user + "' '" + password + "'", &out) != 0) {
    throw std::runtime_error("htpasswd (apache2-utils) failed: " + out);
  }
  const auto colon = out.find(':');
  const auto end = out.find('\n');
  if (colon == std::string::npos || end == std::string::npos) {
    throw std::runtime_error("unexpected htpasswd output: " + out);
  }
  return out.substr(colon + 1, end - colon - 1);
}

TestPki make_test_pki(const std::string& dir) {
  TestPki p{dir + "/ca.pem",     dir + "/server.pem",   dir + "/server.key",  dir + "/client.pem",
            dir + "/client.key", dir + "/stranger.pem", dir + "/stranger.key"};
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  run_or_throw("openssl req -x509" + ec + " -days 1 -subj /CN=cephscope-test-ca -keyout " + dir +
               "/ca.key -out " + p.ca_cert);
  // A leaf signed by the CA: a request, then the CA's signature with the extensions given.
  const auto leaf = [&](const std::string& name, const std::string& cert, const std::string& key,
                        const std::string& ext) {
    write_text(dir + "/" + name + ".ext", ext);
    run_or_throw("openssl req -new" + ec + " -subj /CN=" + name + " -keyout " + key + " -out " +
                 dir + "/" + name + ".csr");
    run_or_throw("openssl x509 -req -days 1 -in " + dir + "/" + name + ".csr -CA " + p.ca_cert +
                 " -CAkey " + dir + "/ca.key -CAcreateserial -extfile " + dir + "/" + name +
                 ".ext -out " + cert);
  };
  leaf("server", p.server_cert, p.server_key,
       "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  leaf("client", p.client_cert, p.client_key, "extendedKeyUsage=clientAuth\n");
  run_or_throw("openssl req -x509" + ec + " -days 1 -subj /CN=stranger -keyout " + p.stranger_key +
               " -out " + p.stranger_cert);
  return p;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cephscope::test
