// HTTP basic authentication against bcrypt hashes, as `basic_auth_users` in a web config
// file: the hash is checked with libcrypt (crypt_r), which knows $2a$, $2b$ and $2y$.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cephscope {

// Whether `hash` is a bcrypt hash libcrypt can check: $2a$, $2b$ or $2y$, a cost of 04 to 31
// and 53 characters of salt and digest.
bool is_bcrypt_hash(std::string_view hash);

// Whether `password` hashes to `hash` (a bcrypt or any other crypt(5) hash); compared in
// constant time.
bool verify_password(const std::string& password, const std::string& hash);

class BasicAuth {
 public:
  BasicAuth() = default;
  // user -> bcrypt hash; no users means every request is let through.
  explicit BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

  [[nodiscard]] bool enabled() const { return !users_.empty(); }
  [[nodiscard]] std::size_t users() const { return users_.size(); }
  // Checks the value of an Authorization header ("Basic base64(user:password)"). An unknown
  // user costs a bcrypt check like a known one, so the time taken does not tell which users
  // exist.
  [[nodiscard]] bool check(std::string_view authorization) const;

  struct Credentials {
    std::string user;
    std::string password;
  };
  // The user and password of an Authorization header; nullopt when it is not Basic.
  static std::optional<Credentials> credentials(std::string_view authorization);
  // The hash a check of `user` runs against: theirs, or, for an unknown user, some user's (the
  // same work, and a refusal whatever it says: `known` false).
  [[nodiscard]] const std::string& hash_for(const std::string& user, bool& known) const;

  // The challenge sent with a 401.
  static constexpr const char* kChallenge = R"(Basic realm="cephscope", charset="UTF-8")";

 private:
  std::map<std::string, std::string> users_;
};

// Standard base64 (RFC 4648, padded); false when `text` is not that.
bool base64_decode(std::string_view text, std::string& out);

}  // namespace cephscope
