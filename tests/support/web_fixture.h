// What the endpoint tests make with the operator's own tools: bcrypt hashes from htpasswd
// (apache2-utils) and certificates from the openssl CLI, in a test directory.
#pragma once

#include <string>

namespace cephscope::test {

// The bcrypt hash htpasswd -B makes for user:password ($2y$, cost 5 to keep tests quick).
std::string htpasswd_hash(const std::string& user, const std::string& password);

// A CA, a server certificate it signed for 127.0.0.1 and localhost, a client certificate it
// signed, and a self-signed client certificate from no CA the server knows.
struct TestPki {
  std::string ca_cert;
  std::string server_cert;
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  std::string stranger_cert;
  std::string stranger_key;
};
TestPki make_test_pki(const std::string& dir);

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

}  // namespace cephscope::test
