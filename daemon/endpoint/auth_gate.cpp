#include "endpoint/auth_gate.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

namespace cephscope {
namespace {

// SHA-256 of the hash, user and password, each with its length in front (no two triples
// spell the same bytes).
std::string digest(const std::string& hash, const std::string& user, const std::string& password) {
  std::string in;
  for (const std::string* part : {&hash, &user, &password}) {
    in += std::to_string(part->size()) + ":" + *part;
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(in.data(), in.size(), md.data(), &len, EVP_sha256(), nullptr) != 1) {
    return {};
  }
  return {reinterpret_cast<const char*>(md.data()), len};
}

}  // namespace

bool AuthGate::budget(const std::string& source, bool fail) {
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  auto it = budgets_.find(source);
  if (it == budgets_.end()) {
    if (budgets_.size() >= limits_.sources) {
      // full: forget the sources whose budget has refilled, else the whole table
      std::erase_if(budgets_, [&](const auto& kv) {
        const double s = std::chrono::duration<double>(now - kv.second.at).count();
        return kv.second.tokens + s * limits_.per_second >= limits_.burst;
      });
      if (budgets_.size() >= limits_.sources) {
        budgets_.clear();
      }
    }
    it = budgets_.emplace(source, Budget{limits_.burst, now}).first;
  }
  Budget& b = it->second;
  const double s = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(limits_.burst, b.tokens + s * limits_.per_second);
  b.at = now;
  if (b.tokens < 1) {
    return false;
  }
  if (fail) {
    b.tokens -= 1;
  }
  return true;
}

AuthGate::Verdict AuthGate::check(const BasicAuth& auth, std::string_view authorization,
                                  const std::string& source) {
  if (!auth.enabled()) {
    return Verdict::kAllowed;
  }
  const auto creds = BasicAuth::credentials(authorization);
  if (!creds) {
    return Verdict::kRefused;  // no bcrypt, no guess: a browser's first request, say
  }
  bool known = false;
  const std::string& hash = auth.hash_for(creds->user, known);
  const std::string key = digest(hash, creds->user, creds->password);
  {
    std::lock_guard lock(mu_);
    if (!key.empty() && passed_.contains(key)) {
      return Verdict::kAllowed;
    }
  }
  if (!budget(source, false)) {
    return Verdict::kThrottled;
  }
  bool ok = false;
  {
    std::lock_guard one(bcrypt_mu_);
    ok = verify_password(creds->password, hash) && known;
  }
  if (!ok) {
    (void)budget(source, true);
    return Verdict::kRefused;
  }
  std::lock_guard lock(mu_);
  if (!key.empty() && passed_.insert(key).second) {
    passed_order_.push_back(key);
    if (passed_order_.size() > limits_.remembered) {
      passed_.erase(passed_order_.front());
      passed_order_.pop_front();
    }
  }
  return Verdict::kAllowed;
}

}  // namespace cephscope
