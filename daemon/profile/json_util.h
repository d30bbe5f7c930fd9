// JsonObject: validating access to untrusted JSON (profiles may come from containers). Every
// field is checked for presence, type and range; unknown keys are refused. Each accessor
// returns its failure at once, as an Error whose message starts with the field's JSON path
// ("$.functions[3].name: missing"); nothing is remembered between calls, so a caller returns
// the first failure and reads nothing after it (in_order() below, or an early return).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace cephscope::profile {

class JsonObject {
 public:
  using Check = std::function<bool(std::string_view)>;
  using Each = std::function<Status(const JsonObject&)>;

  // J seen as an object at PATH ("$"); an error when J is not an object.
  static Result<JsonObject> of(const nlohmann::json& j, std::string path);

  [[nodiscard]] const std::string& path() const { return path_; }

  // Fails on the first key not in KEYS.
  [[nodiscard]] Status known_keys(std::initializer_list<std::string_view> keys) const;
  [[nodiscard]] bool has(std::string_view key) const;

  // Each reads KEY into *OUT. An absent key fails when REQUIRED, else leaves *OUT as it was;
  // a failure never writes *OUT.
  [[nodiscard]] Status string(std::string_view key, std::string* out, size_t max_len,
                              bool required = true, const Check& check = nullptr,
                              std::string_view what = {}) const;
  [[nodiscard]] Status integer(std::string_view key, int64_t* out, int64_t min, int64_t max,
                               bool required = true) const;
  [[nodiscard]] Status unsigned_integer(std::string_view key, uint64_t* out, uint64_t max,
                                        bool required = true) const;
  [[nodiscard]] Status boolean(std::string_view key, bool* out, bool required = true) const;
  // Appends to *OUT; on a failure *OUT may hold the elements before the bad one.
  [[nodiscard]] Status string_array(std::string_view key, std::vector<std::string>* out,
                                    size_t max_items, const Check& check, std::string_view what,
                                    bool required = true) const;
  // Calls EACH on every element, which must be an object; returns the first failure.
  [[nodiscard]] Status array(std::string_view key, size_t max_items, bool required,
                             const Each& each) const;
  // Reads every element of the array at KEY with READ(const JsonObject&, T*) and appends it
  // to *OUT; returns the first failure.
  template <typename T, typename Read>
  [[nodiscard]] Status objects(std::string_view key, size_t max_items, bool required,
                               std::vector<T>* out, const Read& read) const {
    return array(key, max_items, required, [&](const JsonObject& element) {
      T item;
      Status s = read(element, &item);
      if (s.ok()) {
        out->push_back(std::move(item));
      }
      return s;
    });
  }
  // Calls F on the object at KEY and returns what it returns.
  [[nodiscard]] Status object(std::string_view key, bool required, const Each& f) const;

 private:
  JsonObject(const nlohmann::json& j, std::string path) : j_(&j), path_(std::move(path)) {}
  // READ(value) for the value at KEY; when KEY is absent, a failure if REQUIRED, else a success
  // without READ.
  template <typename Read>
  [[nodiscard]] Status visit(std::string_view key, bool required, const Read& read) const;
  [[nodiscard]] std::string at(std::string_view key) const {
    return path_ + "." + std::string(key);
  }

  const nlohmann::json* j_;
  std::string path_;
};

// A failure of untrusted JSON (kInvalidInput) with MESSAGE as it is.
Error invalid_json(std::string message);

// Runs STEPS, callables returning Status, one after another, and returns the first failure
// at once: the steps after it do not run.
template <typename... Steps>
Status in_order(Steps&&... steps) {
  Status status = ok_status();
  (void)((status = std::forward<Steps>(steps)(), status.ok()) && ...);
  return status;
}

// Nesting deeper than MAX_DEPTH is refused before parsing (and before any recursion).
bool json_depth_within(std::string_view text, int max_depth);

// Reads a whole regular file of at most MAX_BYTES.
Result<std::string> read_small_file(const std::string& path, size_t max_bytes);

// 64-bit FNV-1a, as 16 hex digits: a content digest, not a security measure.
std::string fnv1a_hex(std::string_view data);

}  // namespace cephscope::profile
