// Basic auth against hostile clients. A credential that passed is remembered (by a digest of
// the user's hash, the user and the password: no password is kept), so a scraper pays for
// bcrypt once; one bcrypt runs at a time, so guesses cannot take every worker; and each
// source address has a budget of failed password checks (a burst, then one a second), past
// which it is answered 429 without a bcrypt.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "endpoint/basic_auth.h"

namespace cephscope {

class AuthGate {
 public:
  enum class Verdict { kAllowed, kRefused, kThrottled };

  struct Limits {
    double burst = 10;            // failed checks a source may make at once
    double per_second = 1;        // and then, on average
    std::size_t remembered = 64;  // credentials that passed
    std::size_t sources = 4096;   // source addresses with a budget
  };
  AuthGate() = default;
  explicit AuthGate(Limits limits) : limits_(limits) {}

  Verdict check(const BasicAuth& auth, std::string_view authorization, const std::string& source);

 private:
  using Clock = std::chrono::steady_clock;
  struct Budget {
    double tokens;
    Clock::time_point at;
  };
  // Takes a failed check from `source`'s budget when `fail`; whether one is left.
  bool budget(const std::string& source, bool fail);

  Limits limits_;
  std::mutex bcrypt_mu_;  // one bcrypt at a time
  std::mutex mu_;         // what follows
  std::unordered_set<std::string> passed_;
  std::deque<std::string> passed_order_;  // oldest first, to forget
  std::unordered_map<std::string, Budget> budgets_;
};

}  // namespace cephscope
