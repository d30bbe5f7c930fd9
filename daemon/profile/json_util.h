// JsonReader: validating access to untrusted JSON (profiles may come from containers). Every
// field is checked for presence, type and range; unknown keys are refused; the first failure
// is kept with its JSON path and later reads become no-ops.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cephscope::profile {

class JsonReader {
 public:
  using Check = std::function<bool(std::string_view)>;

  JsonReader(const nlohmann::json& object, std::string path);
  JsonReader(const JsonReader&) = delete;
  JsonReader& operator=(const JsonReader&) = delete;

  [[nodiscard]] bool ok() const { return !error_slot_->has_value(); }
  [[nodiscard]] Error error() const;
  void fail(const std::string& message);

  void known_keys(std::initializer_list<std::string_view> keys);
  [[nodiscard]] bool has(std::string_view key) const;

  void string(std::string_view key, std::string* out, size_t max_len, bool required = true,
              const Check& check = nullptr, std::string_view what = {});
  void integer(std::string_view key, int64_t* out, int64_t min, int64_t max, bool required = true);
  void unsigned_integer(std::string_view key, uint64_t* out, uint64_t max, bool required = true);
  void boolean(std::string_view key, bool* out, bool required = true);
  void string_array(std::string_view key, std::vector<std::string>* out, size_t max_items,
                    const Check& check, std::string_view what, bool required = true);
  // Calls EACH with a reader on every element, which must be an object.
  void array(std::string_view key, size_t max_items, bool required,
             const std::function<void(JsonReader&)>& each);
  // Calls F with a reader on the object at KEY.
  void object(std::string_view key, bool required, const std::function<void(JsonReader&)>& f);

 private:
  JsonReader(const nlohmann::json& object, std::string path, std::optional<Error>* slot);
  const nlohmann::json* field(std::string_view key, bool required);
  [[nodiscard]] std::string at(std::string_view key) const {
    return path_ + "." + std::string(key);
  }

  const nlohmann::json& j_;
  std::string path_;
  std::optional<Error> own_error_;
  std::optional<Error>* error_slot_;
};

// Nesting deeper than MAX_DEPTH is refused before parsing (and before any recursion).
bool json_depth_within(std::string_view text, int max_depth);

// Reads a whole file of at most MAX_BYTES.
Result<std::string> read_small_file(const std::string& path, size_t max_bytes);

// 64-bit FNV-1a, as 16 hex digits: a content digest, not a security measure.
std::string fnv1a_hex(std::string_view data);

}  // namespace cephscope::profile
