#include "endpoint/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "server/sockets.h"

namespace cephscope {
namespace {

int protocol_version(TlsVersion v) {
  switch (v) {
    case TlsVersion::kTls10:
      return TLS1_VERSION;
    case TlsVersion::kTls11:
      return TLS1_1_VERSION;
    case TlsVersion::kTls12:
      return TLS1_2_VERSION;
    case TlsVersion::kTls13:
      return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

// For the policies that ask for a certificate without checking it against a CA.
int accept_any_certificate(int /*preverify_ok*/, X509_STORE_CTX* /*store*/) {
  return 1;
}

// An encrypted key would make OpenSSL prompt on the terminal: refuse it instead.
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) {
  return 0;
}

Error tls_error(const std::string& what) {
  return make_error(ErrorKind::kInvalidInput, what + ": " + openssl_errors());
}

}  // namespace

const char* to_string(ClientAuth auth) {
  switch (auth) {
    case ClientAuth::kNoClientCert:
      return "NoClientCert";
    case ClientAuth::kRequestClientCert:
      return "RequestClientCert";
    case ClientAuth::kRequireAnyClientCert:
      return "RequireAnyClientCert";
    case ClientAuth::kVerifyClientCertIfGiven:
      return "VerifyClientCertIfGiven";
    case ClientAuth::kRequireAndVerifyClientCert:
      return "RequireAndVerifyClientCert";
  }
  return "?";
}

const char* to_string(TlsVersion version) {
  switch (version) {
    case TlsVersion::kTls10:
      return "TLS10";
    case TlsVersion::kTls11:
      return "TLS11";
    case TlsVersion::kTls12:
      return "TLS12";
    case TlsVersion::kTls13:
      return "TLS13";
  }
  return "?";
}

Result<std::shared_ptr<const TlsContext>> TlsContext::create(const TlsSettings& s) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return tls_error("cannot make a TLS context");
  }
  std::shared_ptr<const TlsContext> out(new TlsContext(ctx, s));
  SSL_CTX_set_default_passwd_cb(ctx, &no_passphrase);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The event loop writes a response in pieces and may retry from a moved buffer.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_set_min_proto_version(ctx, protocol_version(s.min_version)) != 1 ||
      (s.max_version &&
       SSL_CTX_set_max_proto_version(ctx, protocol_version(*s.max_version)) != 1)) {
    return tls_error("cannot set the TLS versions");
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1) {
    return tls_error("cert_file " + s.cert_file + ": not a PEM certificate");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, s.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      return tls_error("key_file " + s.key_file + " does not match cert_file " + s.cert_file);
    }
    return tls_error("key_file " + s.key_file + ": not an unencrypted PEM private key");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return tls_error("key_file " + s.key_file + " does not match cert_file " + s.cert_file);
  }
  if (!s.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, s.client_ca_file.c_str(), nullptr) != 1) {
      return tls_error("client_ca_file " + s.client_ca_file + ": not PEM CA certificates");
    }
    // Tells clients which CAs their certificate should come from.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.client_ca_file.c_str());
    if (names == nullptr) {
      return tls_error("client_ca_file " + s.client_ca_file + ": no CA certificate");
    }
    SSL_CTX_set_client_CA_list(ctx, names);
  }
  switch (s.client_auth) {
    case ClientAuth::kNoClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuth::kRequestClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, &accept_any_certificate);
      break;
    case ClientAuth::kRequireAnyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                         &accept_any_certificate);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  // Session resumption with client certificates needs an id context.
  static constexpr unsigned char kSessionContext[] = "cephscope";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  return out;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

}  // namespace cephscope
