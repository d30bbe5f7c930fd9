// The endpoint's web config file (--web.config.file, or `web_config_file` in the config), in
// the format of the Prometheus exporter toolkit: `tls_server_config` and `basic_auth_users`.
// Parsed as strictly as the daemon's config: an unknown key is an error that names it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "endpoint/basic_auth.h"
#include "endpoint/tls_context.h"

namespace cephscope {

// The file as written, with its paths made absolute and checked readable.
struct WebConfigFile {
  std::optional<TlsSettings> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
};

// `source` names the file in errors ("FILE:LINE: key: problem"); relative paths in it are
// taken from `base_dir`, as the exporter toolkit takes them from the file's directory.
Result<WebConfigFile> parse_web_config(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir);

// What the endpoint enforces.
struct WebConfig {
  std::shared_ptr<const TlsContext> tls;  // null: plain HTTP
  BasicAuth auth;                         // no users: no authentication
  std::string source;                     // the file; "" when there is none

  // "TLS (min TLS12, client certificates NoClientCert), basic auth (2 users)", for the log.
  [[nodiscard]] std::string summary() const;
};

// Reads, parses and loads the certificates of the file at `path`; "" gives plain HTTP with no
// authentication.
Result<WebConfig> load_web_config(const std::string& path);

}  // namespace cephscope
