#include "profile/probe_set.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "profile/json_util.h"

namespace cephscope::profile {

namespace {

using nlohmann::json;

constexpr size_t kMaxSpecBytes = 1 << 20;
constexpr size_t kMaxItems = 4096;
constexpr size_t kMaxNameLen = 512;

Error bad(std::string_view what) {
  return make_error(ErrorKind::kInvalidInput, "probe set: " + std::string(what));
}

bool valid_object_name(std::string_view s) {
  return !s.empty() && s.size() <= 255 && s.find('/') == std::string_view::npos &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isgraph(static_cast<unsigned char>(c)) != 0; });
}

bool is_set_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

Status read_type(const JsonObject& t, TypeSpec* spec) {
  return in_order(
      [&] {
        return t.known_keys({"name", "members"});
      },
      [&] {
        return t.string("name", &spec->name, kMaxNameLen, true, is_qualified_name,
                        "a qualified type name");
      },
      [&] {
        return t.string_array("members", &spec->members, kMaxItems, is_member_path, "a member path",
                              /*required=*/false);
      });
}

Status read_call(const JsonObject& c, CallSpec* spec) {
  return in_order(
      [&] {
        return c.known_keys({"function", "callee"});
      },
      [&] {
        return c.string("function", &spec->function, kMaxNameLen, true, is_qualified_name,
                        "a qualified function name");
      },
      [&] {
        return c.string("callee", &spec->callee, kMaxNameLen, true, is_qualified_name,
                        "a qualified function name");
      });
}

}  // namespace

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLen || std::isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

bool is_member_path(std::string_view s) {
  size_t parts = 0;
  while (true) {
    const size_t dot = s.find('.');
    if (!is_identifier(s.substr(0, dot)) || ++parts > 16) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    s.remove_prefix(dot + 1);
  }
}

bool is_qualified_name(std::string_view s) {
  return !s.empty() && s.size() <= kMaxNameLen && s.front() != ':' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isprint(static_cast<unsigned char>(c)) != 0 && c != '"' && c != '\\';
         });
}

bool ProbeSet::applies_to(std::string_view file_name) const {
  return std::any_of(objects.begin(), objects.end(), [&](const std::string& o) {
    return file_name == o ||
           (file_name.starts_with(o) && file_name.size() > o.size() && file_name[o.size()] == '.');
  });
}

void add_members(ProbeSet& set, std::span<const MemberRef> members) {
  for (const auto& m : members) {
    auto t = std::find_if(set.types.begin(), set.types.end(),
                          [&](const TypeSpec& ts) { return ts.name == m.type; });
    if (t == set.types.end()) {
      t = set.types.insert(set.types.end(), TypeSpec{m.type, {}});
    }
    t->members.emplace_back(m.path);
  }
}

Result<ProbeSet> parse_probe_set(std::string_view text) {
  if (text.size() > kMaxSpecBytes) {
    return bad("file too large");
  }
  if (!json_depth_within(text, 16)) {
    return bad("nested too deep");
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return bad("not a JSON object");
  }
  auto r = JsonObject::of(doc, "probe set");
  if (!r.ok()) {
    return r.error();
  }
  ProbeSet set;
  std::string schema;
  int64_t version = 0;
  Status header = in_order(
      [&] {
        return r->known_keys({"schema", "schema_version", "name", "description", "objects",
                              "functions", "types", "calls", "markers"});
      },
      [&] { return r->string("schema", &schema, 64); },
      [&] { return r->integer("schema_version", &version, 0, 1 << 20); });
  if (!header.ok()) {
    return header.error();
  }
  if (schema != "cephscope-probe-set") {
    return bad("schema is \"" + schema + R"(", expected "cephscope-probe-set")");
  }
  if (version != kProbeSetSchemaVersion) {
    return bad("unknown schema_version " + std::to_string(version));
  }
  Status body = in_order(
      [&] { return r->string("name", &set.name, 64); },
      [&] { return r->string("description", &set.description, 4096, /*required=*/false); },
      [&] {
        return r->string_array("objects", &set.objects, 64, valid_object_name,
                               "an object file name");
      },
      [&] {
        return r->string_array("functions", &set.functions, kMaxItems, is_qualified_name,
                               "a qualified function name", /*required=*/false);
      },
      [&] { return r->objects("types", kMaxItems, /*required=*/false, &set.types, read_type); },
      [&] { return r->objects("calls", kMaxItems, /*required=*/false, &set.calls, read_call); },
      [&] { return r->boolean("markers", &set.markers, /*required=*/false); });
  if (!body.ok()) {
    return body.error();
  }
  if (!is_set_name(set.name)) {
    return bad("name must be 1-64 of [a-z0-9_-]");
  }
  if (set.objects.empty()) {
    return bad("needs at least one object");
  }
  set.digest = probe_set_digest(set);
  return set;
}

ProbeSet markers_probe_set(const std::string& file_name) {
  ProbeSet set;
  set.name = "usdt";
  set.description = "every static marker (.note.stapsdt)";
  set.objects = {file_name};
  set.markers = true;
  set.digest = probe_set_digest(set);
  return set;
}

std::string probe_set_digest(const ProbeSet& set) {
  // What changes the resolved result, not the description.
  json canon = {{"functions", set.functions}, {"objects", set.objects}};
  for (const auto& t : set.types) {
    canon["types"].push_back({{"name", t.name}, {"members", t.members}});
  }
  if (set.markers) {  // absent otherwise: the digests of sets without markers stay as they were
    canon["markers"] = true;
  }
  for (const auto& c : set.calls) {  // the same for sets without calls
    canon["calls"].push_back({{"function", c.function}, {"callee", c.callee}});
  }
  return fnv1a_hex(canon.dump());
}

std::string probe_set_to_json(const ProbeSet& set) {
  json doc = {{"schema", "cephscope-probe-set"},
              {"schema_version", kProbeSetSchemaVersion},
              {"name", set.name},
              {"description", set.description},
              {"objects", set.objects},
              {"functions", set.functions},
              {"types", json::array()}};
  for (const auto& t : set.types) {
    doc["types"].push_back({{"name", t.name}, {"members", t.members}});
  }
  for (const auto& c : set.calls) {
    doc["calls"].push_back({{"function", c.function}, {"callee", c.callee}});
  }
  if (set.markers) {
    doc["markers"] = true;
  }
  return doc.dump(2) + "\n";
}

Result<ProbeSet> load_probe_set(const std::string& path) {
  auto text = read_small_file(path, kMaxSpecBytes);
  if (!text.ok()) {
    return text.error();
  }
  auto set = parse_probe_set(*text);
  if (!set.ok()) {
    return make_error(set.error().kind, path + ": " + set.error().message);
  }
  return set;
}

}  // namespace cephscope::profile
