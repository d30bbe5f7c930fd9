#include "endpoint/web_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/yaml_errors.h"

namespace cephscope {
namespace {

using yaml::check_keys;
using yaml::line_of;
using yaml::Problem;
using yaml::require_map;
using yaml::scalar;

// Keys of the exporter toolkit's format that cephscope does not implement (check_keys names
// them as such).
const std::set<std::string> kToolkitTopLevel = {"http_server_config", "rate_limit"};
const std::set<std::string> kToolkitTls = {"cert",
                                           "key",
                                           "client_ca",
                                           "client_allowed_sans",
                                           "cipher_suites",
                                           "curve_preferences",
                                           "prefer_server_cipher_suites"};

// A file the daemon can read, its path made absolute against base_dir.
std::string readable_file(const YAML::Node& node, const std::string& key,
                          const std::string& base_dir) {
  const std::string text = scalar(node, key);
  if (text.empty()) {
    throw Problem{line_of(node), key, "expected a file name"};
  }
  const std::filesystem::path path = std::filesystem::path(base_dir) / text;
  std::ifstream in(path);
  if (!in) {
    throw Problem{line_of(node), key, "cannot read " + path.string() + ": " + std::strerror(errno)};
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Problem{line_of(node), key, path.string() + " is not a file"};
  }
  return path.string();
}

TlsVersion tls_version(const YAML::Node& node, const std::string& key) {
  const std::string text = scalar(node, key);
  for (auto v : {TlsVersion::kTls10, TlsVersion::kTls11, TlsVersion::kTls12, TlsVersion::kTls13}) {
    if (text == to_string(v)) {
      return v;
    }
  }
  throw Problem{line_of(node), key,
                "unknown TLS version '" + text + "' (TLS10, TLS11, TLS12, TLS13)"};
}

ClientAuth client_auth(const YAML::Node& node, const std::string& key) {
  const std::string text = scalar(node, key);
  for (auto a : {ClientAuth::kNoClientCert, ClientAuth::kRequestClientCert,
                 ClientAuth::kRequireAnyClientCert, ClientAuth::kVerifyClientCertIfGiven,
                 ClientAuth::kRequireAndVerifyClientCert}) {
    if (text == to_string(a)) {
      return a;
    }
  }
  throw Problem{line_of(node), key,
                "unknown policy '" + text +
                    "' (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                    "VerifyClientCertIfGiven, RequireAndVerifyClientCert)"};
}

TlsSettings parse_tls(const YAML::Node& node, const std::string& base_dir) {
  const std::string key = "tls_server_config";
  require_map(node, key);
  check_keys(
      node, key,
      {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version"},
      kToolkitTls);
  for (const char* required : {"cert_file", "key_file"}) {
    if (!node[required]) {
      throw Problem{line_of(node), key, std::string("missing ") + required};
    }
  }
  TlsSettings tls;
  tls.cert_file = readable_file(node["cert_file"], key + ".cert_file", base_dir);
  tls.key_file = readable_file(node["key_file"], key + ".key_file", base_dir);
  if (node["client_ca_file"]) {
    tls.client_ca_file = readable_file(node["client_ca_file"], key + ".client_ca_file", base_dir);
  }
  yaml::read_if(node, key, "client_auth_type", tls.client_auth, client_auth);
  const bool verifies = tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                        tls.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  if (verifies && tls.client_ca_file.empty()) {
    throw Problem{line_of(node["client_auth_type"]), key + ".client_auth_type",
                  std::string(to_string(tls.client_auth)) + " needs client_ca_file"};
  }
  if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::kNoClientCert) {
    throw Problem{line_of(node["client_ca_file"]), key + ".client_ca_file",
                  "set, but client_auth_type asks for no client certificate (use "
                  "RequireAndVerifyClientCert)"};
  }
  yaml::read_if(node, key, "min_version", tls.min_version, tls_version);
  if (node["max_version"]) {
    tls.max_version = tls_version(node["max_version"], key + ".max_version");
    if (*tls.max_version < tls.min_version) {
      throw Problem{line_of(node["max_version"]), key + ".max_version",
                    "below min_version " + std::string(to_string(tls.min_version))};
    }
  }
  return tls;
}

std::map<std::string, std::string> parse_users(const YAML::Node& node) {
  const std::string key = "basic_auth_users";
  require_map(node, key);
  std::map<std::string, std::string> users;
  for (const auto& item : node) {
    const std::string user = scalar(item.first, key);
    const std::string user_key = std::string(key).append(".").append(user);
    if (user.empty() || user.find(':') != std::string::npos) {
      throw Problem{line_of(item.first), user_key, "a user name must be non-empty and have no ':'"};
    }
    const std::string hash = scalar(item.second, user_key);
    if (!is_bcrypt_hash(hash)) {
      throw Problem{
          line_of(item.second), user_key,
          "not a bcrypt hash ($2y$..., as `htpasswd -nBC 10 " + user + "` prints after the colon)"};
    }
    if (!users.emplace(user, hash).second) {
      throw Problem{line_of(item.first), user_key, "listed twice"};
    }
  }
  return users;
}

}  // namespace

Result<WebConfigFile> parse_web_config(const std::string& yaml_text, const std::string& source,
                                       const std::string& base_dir) {
  return yaml::parse_yaml_text<WebConfigFile>(yaml_text, source, [&](const YAML::Node& root) {
    WebConfigFile out;
    if (root.IsNull()) {
      return out;  // an empty file: plain HTTP, no authentication
    }
    require_map(root, "(top level)");
    check_keys(root, "", {"tls_server_config", "basic_auth_users"}, kToolkitTopLevel);
    if (root["tls_server_config"]) {
      out.tls = parse_tls(root["tls_server_config"], base_dir);
    }
    if (root["basic_auth_users"]) {
      out.basic_auth_users = parse_users(root["basic_auth_users"]);
    }
    return out;
  });
}

Result<WebConfig> load_web_config(const std::string& path) {
  WebConfig out;
  if (path.empty()) {
    return out;
  }
  std::ifstream in(path);
  if (!in) {
    return make_error(ErrorKind::kNotFound,
                      path + ": cannot read the web config file: " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string base_dir = std::filesystem::absolute(path).parent_path().string();
  auto file = parse_web_config(text.str(), path, base_dir);
  if (!file.ok()) {
    return file.error();
  }
  if (file->tls) {
    auto tls = TlsContext::create(*file->tls);
    if (!tls.ok()) {
      return make_error(ErrorKind::kInvalidInput,
                        path + ": tls_server_config: " + tls.error().message);
    }
    out.tls = *tls;
  }
  out.auth = BasicAuth(std::move(file->basic_auth_users));
  out.source = path;
  return out;
}

std::string WebConfig::summary() const {
  std::string out;
  if (tls) {
    const auto& s = tls->settings();
    out = std::string("TLS (min ") + to_string(s.min_version) + ", client certificates " +
          to_string(s.client_auth) + ")";
  } else {
    out = "plain HTTP";
  }
  out += auth.enabled() ? ", basic auth (" + std::to_string(auth.users()) + " users)"
                        : ", no authentication";
  return out;
}

}  // namespace cephscope
