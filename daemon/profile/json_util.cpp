#include "profile/json_util.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "profile/unique_fd.h"

namespace cephscope::profile {

using nlohmann::json;

JsonReader::JsonReader(const json& object, std::string path)
    : JsonReader(object, std::move(path), nullptr) {}

JsonReader::JsonReader(const json& object, std::string path, std::optional<Error>* slot)
    : j_(object), path_(std::move(path)), error_slot_(slot != nullptr ? slot : &own_error_) {
  if (!j_.is_object()) {
    fail(path_ + ": expected an object");
  }
}

Error JsonReader::error() const {
  return error_slot_->value_or(make_error(ErrorKind::kInvalidInput, "no error"));
}

void JsonReader::fail(const std::string& message) {
  if (!error_slot_->has_value()) {
    *error_slot_ = make_error(ErrorKind::kInvalidInput, message);
  }
}

void JsonReader::known_keys(std::initializer_list<std::string_view> keys) {
  if (!ok()) {
    return;
  }
  for (const auto& [k, v] : j_.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      fail(at(k) + ": unknown field");
      return;
    }
  }
}

bool JsonReader::has(std::string_view key) const {
  return ok() && j_.contains(key);
}

const json* JsonReader::field(std::string_view key, bool required) {
  if (!ok()) {
    return nullptr;
  }
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (required) {
      fail(at(key) + ": missing");
    }
    return nullptr;
  }
  return &*it;
}

void JsonReader::string(std::string_view key, std::string* out, size_t max_len, bool required,
                        const Check& check, std::string_view what) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  if (!v->is_string()) {
    fail(at(key) + ": expected a string");
    return;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) {
    fail(at(key) + ": longer than " + std::to_string(max_len));
  } else if (check && !check(s)) {
    fail(at(key) + ": not " + std::string(what));
  } else {
    *out = s;
  }
}

void JsonReader::integer(std::string_view key, int64_t* out, int64_t min, int64_t max,
                         bool required) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  if (v->is_number_unsigned()) {
    const auto u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      fail(at(key) + ": out of range");
      return;
    }
    *out = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    const auto i = v->get<int64_t>();
    if (i < min || i > max) {
      fail(at(key) + ": out of range");
      return;
    }
    *out = i;
  } else {
    fail(at(key) + ": expected an integer");
  }
}

void JsonReader::unsigned_integer(std::string_view key, uint64_t* out, uint64_t max,
                                  bool required) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
    fail(at(key) + ": expected a non-negative integer");
    return;
  }
  const auto u = v->get<uint64_t>();
  if (u > max) {
    fail(at(key) + ": out of range");
    return;
  }
  *out = u;
}

void JsonReader::boolean(std::string_view key, bool* out, bool required) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  if (!v->is_boolean()) {
    fail(at(key) + ": expected true or false");
    return;
  }
  *out = v->get<bool>();
}

void JsonReader::string_array(std::string_view key, std::vector<std::string>* out, size_t max_items,
                              const Check& check, std::string_view what, bool required) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  if (!v->is_array() || v->size() > max_items) {
    fail(at(key) + ": expected an array of at most " + std::to_string(max_items) + " strings");
    return;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string() || (check && !check(e.get_ref<const std::string&>()))) {
      fail(at(key) + "[" + std::to_string(i) + "]: not " + std::string(what));
      return;
    }
    out->push_back(e.get<std::string>());
  }
}

void JsonReader::array(std::string_view key, size_t max_items, bool required,
                       const std::function<void(JsonReader&)>& each) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  if (!v->is_array() || v->size() > max_items) {
    fail(at(key) + ": expected an array of at most " + std::to_string(max_items) + " objects");
    return;
  }
  for (size_t i = 0; i < v->size() && ok(); ++i) {
    JsonReader element((*v)[i], at(key) + "[" + std::to_string(i) + "]", error_slot_);
    if (element.ok()) {
      each(element);
    }
  }
}

void JsonReader::object(std::string_view key, bool required,
                        const std::function<void(JsonReader&)>& f) {
  const json* v = field(key, required);
  if (v == nullptr) {
    return;
  }
  JsonReader inner(*v, at(key), error_slot_);
  if (inner.ok()) {
    f(inner);
  }
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
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kSystem,
                      path + ": " + std::strerror(err), err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(ErrorKind::kInvalidInput, path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return make_error(ErrorKind::kInvalidInput,
                      path + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    done += static_cast<size_t>(n);
  }
  out.resize(done);  // the file may shrink while read
  return out;
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
