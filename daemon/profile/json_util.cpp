#include "profile/json_util.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/safe_file.h"
#include "core/unique_fd.h"

namespace cephscope::profile {

using nlohmann::json;

Error invalid_json(std::string message) {
  return make_error(ErrorKind::kInvalidInput, std::move(message));
}

Result<JsonObject> JsonObject::of(const json& j, std::string path) {
  if (!j.is_object()) {
    return invalid_json(path + ": expected an object");
  }
  return JsonObject(j, std::move(path));
}

Status JsonObject::known_keys(std::initializer_list<std::string_view> keys) const {
  for (const auto& [k, v] : j_->items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      return invalid_json(at(k) + ": unknown field");
    }
  }
  return ok_status();
}

bool JsonObject::has(std::string_view key) const {
  return j_->contains(key);
}

template <typename Read>
Status JsonObject::visit(std::string_view key, bool required, const Read& read) const {
  const auto it = j_->find(key);
  if (it == j_->end()) {
    return required ? Status(invalid_json(at(key) + ": missing")) : ok_status();
  }
  return read(*it);
}

Status JsonObject::string(std::string_view key, std::string* out, size_t max_len, bool required,
                          const Check& check, std::string_view what) const {
  return visit(key, required, [&](const json& v) -> Status {
    if (!v.is_string()) {
      return invalid_json(at(key) + ": expected a string");
    }
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > max_len) {
      return invalid_json(at(key) + ": longer than " + std::to_string(max_len));
    }
    if (check && !check(s)) {
      return invalid_json(at(key) + ": not " + std::string(what));
    }
    *out = s;
    return ok_status();
  });
}

Status JsonObject::integer(std::string_view key, int64_t* out, int64_t min, int64_t max,
                           bool required) const {
  return visit(key, required, [&](const json& v) -> Status {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(max)) {
        return invalid_json(at(key) + ": out of range");
      }
      *out = static_cast<int64_t>(u);
      return ok_status();
    }
    if (v.is_number_integer()) {
      const auto i = v.get<int64_t>();
      if (i < min || i > max) {
        return invalid_json(at(key) + ": out of range");
      }
      *out = i;
      return ok_status();
    }
    return invalid_json(at(key) + ": expected an integer");
  });
}

Status JsonObject::unsigned_integer(std::string_view key, uint64_t* out, uint64_t max,
                                    bool required) const {
  return visit(key, required, [&](const json& v) -> Status {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      return invalid_json(at(key) + ": expected a non-negative integer");
    }
    const auto u = v.get<uint64_t>();
    if (u > max) {
      return invalid_json(at(key) + ": out of range");
    }
    *out = u;
    return ok_status();
  });
}

Status JsonObject::boolean(std::string_view key, bool* out, bool required) const {
  return visit(key, required, [&](const json& v) -> Status {
    if (!v.is_boolean()) {
      return invalid_json(at(key) + ": expected true or false");
    }
    *out = v.get<bool>();
    return ok_status();
  });
}

Status JsonObject::string_array(std::string_view key, std::vector<std::string>* out,
                                size_t max_items, const Check& check, std::string_view what,
                                bool required) const {
  return visit(key, required, [&](const json& v) -> Status {
    if (!v.is_array() || v.size() > max_items) {
      return invalid_json(at(key) + ": expected an array of at most " + std::to_string(max_items) +
                          " strings");
    }
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      if (!e.is_string() || (check && !check(e.get_ref<const std::string&>()))) {
        return invalid_json(at(key) + "[" + std::to_string(i) + "]: not " + std::string(what));
      }
      out->push_back(e.get<std::string>());
    }
    return ok_status();
  });
}

Status JsonObject::array(std::string_view key, size_t max_items, bool required,
                         const Each& each) const {
  return visit(key, required, [&](const json& v) -> Status {
    if (!v.is_array() || v.size() > max_items) {
      return invalid_json(at(key) + ": expected an array of at most " + std::to_string(max_items) +
                          " objects");
    }
    for (size_t i = 0; i < v.size(); ++i) {
      auto element = of(v[i], at(key) + "[" + std::to_string(i) + "]");
      if (!element.ok()) {
        return element.error();
      }
      if (Status s = each(*element); !s.ok()) {
        return s;
      }
    }
    return ok_status();
  });
}

Status JsonObject::object(std::string_view key, bool required, const Each& f) const {
  return visit(key, required, [&](const json& v) -> Status {
    auto inner = of(v, at(key));
    if (!inner.ok()) {
      return inner.error();
    }
    return f(*inner);
  });
}

bool json_depth_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return false;
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

Result<std::string> read_small_file(const std::string& path, size_t max_bytes) {
  // A profile or spec file is data: only a regular file is ever opened, so a FIFO or device
  // put in a profile directory can neither block the daemon nor be touched.
  auto fd = open_regular(path, SafeOpen{max_bytes, RootWalk::kAuto});
  if (!fd.ok()) {
    return fd.error();
  }
  return read_capped(fd->get(), path, max_bytes);
}

std::string fnv1a_hex(std::string_view data) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

}  // namespace cephscope::profile
