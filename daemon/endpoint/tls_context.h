// The endpoint's TLS: an OpenSSL server context made from `tls_server_config`, with the
// exporter toolkit's client certificate policies and protocol versions.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/result.h"

struct ssl_ctx_st;

namespace cephscope {

// client_auth_type, named as in the exporter toolkit (after Go's tls.ClientAuthType).
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,           // asks for a certificate, accepts any or none
  kRequireAnyClientCert,        // needs a certificate, not checked against client_ca_file
  kVerifyClientCertIfGiven,     // a certificate is optional, but checked when given
  kRequireAndVerifyClientCert,  // needs a certificate signed by client_ca_file
};

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

struct TlsSettings {
  std::string cert_file;       // PEM: the certificate, then any intermediates
  std::string key_file;        // PEM, unencrypted
  std::string client_ca_file;  // PEM CA certificates for client certificates; "" for none
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  TlsVersion min_version = TlsVersion::kTls12;
  std::optional<TlsVersion> max_version;
};

const char* to_string(ClientAuth auth);
const char* to_string(TlsVersion version);

class TlsContext {
 public:
  // Loads the certificate, the key (which must match it) and the client CAs.
  static Result<std::shared_ptr<const TlsContext>> create(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  [[nodiscard]] ssl_ctx_st* get() const { return ctx_; }
  [[nodiscard]] const TlsSettings& settings() const { return settings_; }

 private:
  TlsContext(ssl_ctx_st* ctx, TlsSettings settings) : ctx_(ctx), settings_(std::move(settings)) {}
  ssl_ctx_st* ctx_;
  TlsSettings settings_;
};

}  // namespace cephscope
