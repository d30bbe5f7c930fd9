#include "endpoint/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>

#include <cctype>
#include <memory>
#include <regex>

namespace cephscope {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  if (c == '+') {
    return 62;
  }
  if (c == '/') {
    return 63;
  }
  return -1;
}

// Compares two secrets in a time that does not tell where they differ.
bool equal_constant_time(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

bool is_bcrypt_hash(std::string_view hash) {
  static const std::regex kBcrypt(R"(^\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}$)");
  return std::regex_match(hash.begin(), hash.end(), kBcrypt);
}

bool verify_password(const std::string& password, const std::string& hash) {
  if (password.find('\0') != std::string::npos) {
    return false;  // crypt_r would see only the part before it
  }
  // crypt_data is tens of kilobytes: on the heap, one per call, so checks run in parallel.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  // On failure libcrypt returns NULL or a token starting with '*', never a valid hash.
  if (out == nullptr || out[0] == '*') {
    return false;
  }
  return equal_constant_time(out, hash);
}

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  if (text.size() % 4 != 0) {
    return false;
  }
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && last && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) {
        return false;  // a character after padding
      }
      v[j] = base64_value(c);
      if (v[j] < 0) {
        return false;
      }
    }
    const unsigned bits = (static_cast<unsigned>(v[0]) << 18) |
                          (static_cast<unsigned>(v[1]) << 12) | (static_cast<unsigned>(v[2]) << 6) |
                          static_cast<unsigned>(v[3]);
    out.push_back(static_cast<char>((bits >> 16) & 0xff));
    if (pad < 2) {
      out.push_back(static_cast<char>((bits >> 8) & 0xff));
    }
    if (pad < 1) {
      out.push_back(static_cast<char>(bits & 0xff));
    }
  }
  return true;
}

std::optional<BasicAuth::Credentials> BasicAuth::credentials(std::string_view authorization) {
  // "Basic" is case-insensitive (RFC 9110 11.1), then one or more spaces and the token.
  constexpr std::string_view kScheme = "basic";
  if (authorization.size() <= kScheme.size()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) {
      return std::nullopt;
    }
  }
  std::string_view token = authorization.substr(kScheme.size());
  if (token.front() != ' ') {
    return std::nullopt;
  }
  while (!token.empty() && token.front() == ' ') {
    token.remove_prefix(1);
  }
  while (!token.empty() && token.back() == ' ') {
    token.remove_suffix(1);
  }
  std::string decoded;
  if (!base64_decode(token, decoded)) {
    return std::nullopt;
  }
  const auto colon = decoded.find(':');
  if (colon == std::string::npos) {
    return std::nullopt;
  }
  return Credentials{decoded.substr(0, colon), decoded.substr(colon + 1)};
}

const std::string& BasicAuth::hash_for(const std::string& user, bool& known) const {
  const auto it = users_.find(user);
  known = it != users_.end();
  return known ? it->second : users_.begin()->second;
}

bool BasicAuth::check(std::string_view authorization) const {
  if (users_.empty()) {
    return true;
  }
  const auto creds = credentials(authorization);
  if (!creds) {
    return false;
  }
  bool known = false;
  const std::string& hash = hash_for(creds->user, known);
  return verify_password(creds->password, hash) && known;
}

}  // namespace cephscope
