#include "profile/profile_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/unique_fd.h"
#include "core/utf8.h"
#include "profile/json_util.h"
#include "profile/probe_set.h"

namespace cephscope::profile {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxVaddr = uint64_t{1} << 47;  // x86-64 user space
constexpr uint64_t kMaxFileOffset = uint64_t{1} << 40;
constexpr uint64_t kMaxTypeSize = uint64_t{1} << 32;
constexpr size_t kMaxEntries = 4096;
constexpr size_t kMaxInstances = 65536;
constexpr size_t kMaxCallSites = 256;  // per function and callee
constexpr size_t kMaxText = 4096;      // messages, paths
constexpr size_t kMaxSymbol = 16384;   // mangled names get long with templates
constexpr size_t kMaxTypeName = 4096;
constexpr size_t kMaxShort = 256;  // parameter names, expressions
constexpr int kMaxDepth = 16;

const std::vector<std::string_view> kInsnKinds = {"",    "push",    "branch", "nop",
                                                  "ret", "endbr64", "other"};

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
}

bool is_hex16(std::string_view s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Text from binaries (names, DWARF strings) made into what the reader accepts: valid UTF-8,
// no control characters (both become '?'), at most MAX bytes. So whatever is written can be
// read back.
std::string fit(std::string_view in, size_t max) {
  std::string out;
  out.reserve(std::min(in.size(), max));
  for (size_t i = 0; i < in.size();) {
    char32_t cp = 0;
    const size_t len = utf8_sequence_length(in.substr(i), cp);
    const auto c = static_cast<unsigned char>(in[i]);
    const bool ok = len > 0 && !(len == 1 && (c < 0x20 || c == 0x7f));
    const size_t add = ok ? len : 1;
    if (out.size() + add > max) {
      break;
    }
    if (ok) {
      out.append(in.substr(i, len));
    } else {
      out.push_back('?');
    }
    i += len > 0 ? len : 1;
  }
  return out;
}

Error corrupt(const std::string& why) {
  return make_error(ErrorKind::kInvalidInput, "corrupt profile: " + why);
}

Status read_status(const JsonObject& r, ItemStatus* status, std::string* message) {
  std::string s;
  if (Status read = r.string("status", &s, 32); !read.ok()) {
    return read;
  }
  auto st = item_status_from(s);
  if (!st) {
    return invalid_json("unknown status \"" + s + "\"");
  }
  *status = *st;
  return r.string("message", message, kMaxText, false, printable, "printable text");
}

Status read_instance(const JsonObject& r, FunctionInstance* i) {
  return in_order(
      [&] {
        return r.known_keys({"linkage_name", "symbol", "vaddr", "file_offset", "size", "inlined",
                             "clone", "entry_insn", "caller"});
      },
      [&] {
        return r.string("linkage_name", &i->linkage_name, kMaxSymbol, false, printable,
                        "printable text");
      },
      [&] {
        return r.string("symbol", &i->symbol, kMaxSymbol, false, printable, "printable text");
      },
      [&] { return r.unsigned_integer("vaddr", &i->vaddr, kMaxVaddr); },
      [&] { return r.unsigned_integer("file_offset", &i->file_offset, kMaxFileOffset); },
      [&] { return r.unsigned_integer("size", &i->size, kMaxTypeSize); },
      [&] { return r.boolean("inlined", &i->inlined); },
      [&] { return r.boolean("clone", &i->clone, false); },
      [&] {
        return r.string(
            "entry_insn", &i->entry_insn, 16, false,
            [](std::string_view s) {
              return std::find(kInsnKinds.begin(), kInsnKinds.end(), s) != kInsnKinds.end();
            },
            "an instruction kind");
      },
      [&] {
        return r.string("caller", &i->caller, kMaxSymbol, false, printable, "printable text");
      });
}

Status read_function(const JsonObject& r, FunctionEntry* f) {
  Status s = in_order(
      [&] {
        return r.known_keys({"name", "status", "message", "instances"});
      },
      [&] { return r.string("name", &f->name, 512, true, is_qualified_name, "a qualified name"); },
      [&] { return read_status(r, &f->status, &f->message); },
      [&] { return r.objects("instances", kMaxInstances, false, &f->instances, read_instance); });
  if (!s.ok()) {
    return s;
  }
  const auto out_of_line = std::count_if(f->instances.begin(), f->instances.end(),
                                         [](const FunctionInstance& i) { return !i.inlined; });
  const bool consistent =
      (f->status == ItemStatus::kOk && out_of_line > 0) ||
      (f->status == ItemStatus::kInlinedOnly && out_of_line == 0 && !f->instances.empty()) ||
      (f->status != ItemStatus::kOk && f->status != ItemStatus::kInlinedOnly &&
       f->instances.empty());
  if (!consistent) {
    return invalid_json("function " + f->name + ": status and instances disagree");
  }
  return ok_status();
}

Status read_type(const JsonObject& r, TypeEntry* t) {
  return in_order(
      [&] {
        return r.known_keys({"name", "status", "message", "size"});
      },
      [&] { return r.string("name", &t->name, 512, true, is_qualified_name, "a qualified name"); },
      [&] { return read_status(r, &t->status, &t->message); },
      [&] {
        return r.unsigned_integer("size", &t->size, kMaxTypeSize, t->status == ItemStatus::kOk);
      });
}

Status read_member(const JsonObject& r, MemberEntry* m) {
  Status s = in_order(
      [&] {
        return r.known_keys({"type", "path", "status", "message", "offset", "size", "type_name",
                             "bit_offset", "bit_size"});
      },
      [&] { return r.string("type", &m->type, 512, true, is_qualified_name, "a qualified name"); },
      [&] { return r.string("path", &m->path, 512, true, is_member_path, "a member path"); },
      [&] { return read_status(r, &m->status, &m->message); },
      [&] {
        return r.unsigned_integer("offset", &m->offset, kMaxTypeSize, m->status == ItemStatus::kOk);
      },
      [&] {
        return r.unsigned_integer("size", &m->size, kMaxTypeSize, m->status == ItemStatus::kOk);
      },
      [&] {
        return r.string("type_name", &m->type_name, kMaxTypeName, m->status == ItemStatus::kOk,
                        printable, "printable text");
      });
  if (!s.ok() || !(r.has("bit_size") || r.has("bit_offset"))) {
    return s;
  }
  uint64_t bo = 0;
  uint64_t bs = 0;
  s = in_order([&] { return r.unsigned_integer("bit_offset", &bo, 7); },
               [&] { return r.unsigned_integer("bit_size", &bs, 64); });
  m->bit_offset = static_cast<uint32_t>(bo);
  m->bit_size = static_cast<uint32_t>(bs);
  return s;
}

bool is_callee_saved(std::string_view reg) {
  return std::find(kCalleeSaved.begin(), kCalleeSaved.end(), reg) != kCalleeSaved.end();
}

Status read_call_site(const JsonObject& r, CallSite* c) {
  uint64_t ecx = 0;
  std::string saved;
  Status s = in_order(
      [&] {
        return r.known_keys({"vaddr", "file_offset", "ecx", "rsi_saved_in"});
      },
      [&] { return r.unsigned_integer("vaddr", &c->vaddr, kMaxVaddr); },
      [&] { return r.unsigned_integer("file_offset", &c->file_offset, kMaxFileOffset); },
      [&] { return r.unsigned_integer("ecx", &ecx, UINT32_MAX, false); },
      [&] {
        return r.string("rsi_saved_in", &saved, 3, false, is_callee_saved,
                        "a callee-saved register");
      });
  if (s.ok() && r.has("ecx")) {
    c->ecx = static_cast<uint32_t>(ecx);
  }
  if (s.ok() && r.has("rsi_saved_in")) {
    c->rsi_saved_in = saved;
  }
  return s;
}

Status read_calls(const JsonObject& r, CallSiteEntry* c) {
  Status s = in_order(
      [&] {
        return r.known_keys({"function", "callee", "status", "message", "sites"});
      },
      [&] {
        return r.string("function", &c->function, 512, true, is_qualified_name, "a qualified name");
      },
      [&] {
        return r.string("callee", &c->callee, 512, true, is_qualified_name, "a qualified name");
      },
      [&] { return read_status(r, &c->status, &c->message); },
      [&] { return r.objects("sites", kMaxCallSites, false, &c->sites, read_call_site); });
  if (s.ok() && (c->status == ItemStatus::kOk) == c->sites.empty()) {
    return invalid_json("calls of " + c->callee + " in " + c->function +
                        ": status and sites disagree");
  }
  return s;
}

json calls_to_json(const CallSiteEntry& c) {
  json jc = {{"function", c.function}, {"callee", c.callee}, {"status", to_string(c.status)}};
  if (!c.message.empty()) {
    jc["message"] = fit(c.message, kMaxText);
  }
  if (!c.sites.empty()) {
    jc["sites"] = json::array();
  }
  for (const auto& site : c.sites) {
    json js = {{"vaddr", site.vaddr}, {"file_offset", site.file_offset}};
    if (site.ecx) {
      js["ecx"] = *site.ecx;
    }
    if (site.rsi_saved_in) {
      js["rsi_saved_in"] = *site.rsi_saved_in;
    }
    jc["sites"].push_back(std::move(js));
  }
  return jc;
}

json marker_to_json(const Marker& m) {
  json jm = {{"provider", m.provider},
             {"name", m.name},
             {"vaddr", m.vaddr},
             {"file_offset", m.file_offset},
             {"semaphore_offset", m.semaphore_offset},
             {"arg_spec", fit(m.arg_spec, kMaxShort)}};
  if (!m.args_error.empty()) {
    jm["args_error"] = fit(m.args_error, kMaxShort);
    return jm;
  }
  jm["args"] = json::array();
  for (const auto& a : m.args) {
    json ja = {{"kind", to_string(a.kind)}, {"size", a.size}, {"signed", a.is_signed}};
    if (a.kind != MarkerArg::Kind::kConstant) {
      ja["reg"] = dwarf_reg_name(a.dwarf_reg);
    }
    if (a.kind != MarkerArg::Kind::kRegister) {
      ja["value"] = a.value;
    }
    jm["args"].push_back(std::move(ja));
  }
  return jm;
}

Status read_marker_arg(const JsonObject& r, MarkerArg* a) {
  std::string kind;
  std::string reg;
  uint64_t size = 0;
  Status s = in_order(
      [&] {
        return r.known_keys({"kind", "size", "signed", "reg", "value"});
      },
      [&] { return r.string("kind", &kind, 16); },
      [&] { return r.unsigned_integer("size", &size, 8); },
      [&] { return r.boolean("signed", &a->is_signed); });
  if (!s.ok()) {
    return s;
  }
  const auto k = marker_arg_kind_from(kind);
  if (!k) {
    return invalid_json("unknown argument kind \"" + kind + "\"");
  }
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    return invalid_json("argument size " + std::to_string(size) + " is not 1, 2, 4 or 8");
  }
  a->kind = *k;
  a->size = static_cast<uint8_t>(size);
  const bool has_reg = *k != MarkerArg::Kind::kConstant;
  s = in_order([&] { return r.string("reg", &reg, 8, has_reg); },
               [&] {
                 return r.integer("value", &a->value, INT64_MIN, INT64_MAX,
                                  *k != MarkerArg::Kind::kRegister);
               });
  if (!s.ok()) {
    return s;
  }
  if (has_reg) {
    a->dwarf_reg = dwarf_reg_from(reg);
    if (a->dwarf_reg < 0 || a->dwarf_reg > 15) {
      return invalid_json("unknown register \"" + reg + "\"");
    }
  }
  return ok_status();
}

Status read_marker(const JsonObject& r, Marker* m) {
  auto name = [](std::string_view s) { return is_marker_name(s); };
  return in_order(
      [&] {
        return r.known_keys({"provider", "name", "vaddr", "file_offset", "semaphore_offset",
                             "arg_spec", "args", "args_error"});
      },
      [&] { return r.string("provider", &m->provider, kMaxMarkerName, true, name, "a name"); },
      [&] { return r.string("name", &m->name, kMaxMarkerName, true, name, "a name"); },
      [&] { return r.unsigned_integer("vaddr", &m->vaddr, kMaxVaddr); },
      [&] { return r.unsigned_integer("file_offset", &m->file_offset, kMaxFileOffset); },
      [&] { return r.unsigned_integer("semaphore_offset", &m->semaphore_offset, kMaxFileOffset); },
      [&] {
        return r.string("arg_spec", &m->arg_spec, kMaxShort, true, printable, "printable text");
      },
      [&] {
        return r.string("args_error", &m->args_error, kMaxShort, false, printable,
                        "printable text");
      },
      [&] {
        return r.objects("args", kMaxMarkerArgs, m->args_error.empty(), &m->args, read_marker_arg);
      });
}

}  // namespace

bool is_build_id(std::string_view s) {
  return s.size() >= 8 && s.size() <= 128 && s.size() % 2 == 0 &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

json profile_to_json(const Profile& p) {
  json j;
  j["schema"] = kSchemaName;
  j["schema_version"] = p.schema_version;
  j["build_id"] = p.build_id;
  j["object"] = fit(p.object, 255);
  j["binary_path"] = fit(p.binary_path, kMaxText);
  j["source"] = p.source;
  j["debug_file"] = fit(p.debug_file, kMaxText);
  j["probe_set"] = p.probe_set;
  j["probe_set_digest"] = p.probe_set_digest;
  j["generator"] = fit(p.generator, 128);
  j["created"] = fit(p.created, 64);
  j["functions"] = json::array();
  for (const auto& f : p.functions) {
    json jf = {{"name", f.name}, {"status", to_string(f.status)}};
    if (!f.message.empty()) {
      jf["message"] = fit(f.message, kMaxText);
    }
    if (!f.instances.empty()) {
      jf["instances"] = json::array();
    }
    for (const auto& i : f.instances) {
      json ji = {{"vaddr", i.vaddr},
                 {"file_offset", i.file_offset},
                 {"size", i.size},
                 {"inlined", i.inlined},
                 {"entry_insn", i.entry_insn}};
      if (!i.linkage_name.empty()) {
        ji["linkage_name"] = fit(i.linkage_name, kMaxSymbol);
      }
      if (!i.symbol.empty()) {
        ji["symbol"] = fit(i.symbol, kMaxSymbol);
      }
      if (i.clone) {
        ji["clone"] = true;
      }
      if (!i.caller.empty()) {
        ji["caller"] = fit(i.caller, kMaxSymbol);
      }
      jf["instances"].push_back(std::move(ji));
    }
    j["functions"].push_back(std::move(jf));
  }
  j["types"] = json::array();
  for (const auto& t : p.types) {
    json jt = {{"name", t.name}, {"status", to_string(t.status)}};
    if (t.status == ItemStatus::kOk) {
      jt["size"] = t.size;
    }
    if (!t.message.empty()) {
      jt["message"] = fit(t.message, kMaxText);
    }
    j["types"].push_back(std::move(jt));
  }
  j["members"] = json::array();
  for (const auto& m : p.members) {
    json jm = {{"type", m.type}, {"path", m.path}, {"status", to_string(m.status)}};
    if (m.status == ItemStatus::kOk) {
      jm["offset"] = m.offset;
      jm["size"] = m.size;
      jm["type_name"] = fit(m.type_name, kMaxTypeName);
      if (m.bit_size) {
        jm["bit_offset"] = *m.bit_offset;
        jm["bit_size"] = *m.bit_size;
      }
    }
    if (!m.message.empty()) {
      jm["message"] = fit(m.message, kMaxText);
    }
    j["members"].push_back(std::move(jm));
  }
  if (!p.call_sites.empty()) {
    j["call_sites"] = json::array();
    for (const auto& c : p.call_sites) {
      j["call_sites"].push_back(calls_to_json(c));
    }
  }
  if (!p.markers.empty()) {
    j["markers"] = json::array();
    for (const auto& m : p.markers) {
      j["markers"].push_back(marker_to_json(m));
    }
  }
  return j;
}

std::string dump_profile(const Profile& p) {
  return profile_to_json(p).dump(1) + "\n";
}

Result<Profile> parse_profile(std::string_view text) {
  if (text.size() > kMaxProfileBytes) {
    return corrupt("larger than " + std::to_string(kMaxProfileBytes) + " bytes");
  }
  if (!json_depth_within(text, kMaxDepth)) {
    return corrupt("nested deeper than " + std::to_string(kMaxDepth));
  }
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return corrupt("not valid JSON");
  }
  if (!doc.is_object()) {
    return corrupt("not a JSON object");
  }
  auto r = JsonObject::of(doc, "$");
  if (!r.ok()) {
    return corrupt(r.error().message);
  }
  std::string schema;
  int64_t version = 0;
  Status header = in_order([&] { return r->string("schema", &schema, 64); },
                           [&] { return r->integer("schema_version", &version, 0, 1 << 20); });
  if (!header.ok()) {
    return corrupt(header.error().message);
  }
  if (schema != kSchemaName) {
    return corrupt("schema is \"" + schema + "\", not \"" + std::string(kSchemaName) + "\"");
  }
  if (version != kSchemaVersion) {
    return make_error(ErrorKind::kUnsupported, "unsupported profile schema_version " +
                                                   std::to_string(version) + " (this build reads " +
                                                   std::to_string(kSchemaVersion) + ")");
  }
  Profile p;
  p.schema_version = static_cast<int>(version);
  Status body = in_order(
      [&] {
        return r->known_keys({"schema", "schema_version", "build_id", "object", "binary_path",
                              "source", "debug_file", "probe_set", "probe_set_digest", "generator",
                              "created", "functions", "types", "members", "call_sites", "markers"});
      },
      [&] {
        return r->string("build_id", &p.build_id, 128, true, is_build_id,
                         "a lower-case hex build-id");
      },
      [&] {
        return r->string(
            "object", &p.object, 255, true,
            [](std::string_view s) {
              return !s.empty() && s.find('/') == std::string_view::npos && printable(s);
            },
            "a file name");
      },
      [&] {
        return r->string("binary_path", &p.binary_path, kMaxText, true, printable,
                         "printable text");
      },
      [&] {
        return r->string(
            "source", &p.source, 16, true,
            [](std::string_view s) { return s == "dwarf" || s == "symtab"; }, "dwarf or symtab");
      },
      [&] {
        return r->string("debug_file", &p.debug_file, kMaxText, true, printable, "printable text");
      },
      [&] {
        return r->string(
            "probe_set", &p.probe_set, 64, true,
            [](std::string_view s) {
              return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
              });
            },
            "a probe-set name");
      },
      [&] {
        return r->string("probe_set_digest", &p.probe_set_digest, 16, true, is_hex16,
                         "16 hex digits");
      },
      [&] { return r->string("generator", &p.generator, 128, true, printable, "printable text"); },
      [&] { return r->string("created", &p.created, 64, true, printable, "printable text"); },
      [&] { return r->objects("functions", kMaxEntries, true, &p.functions, read_function); },
      [&] { return r->objects("types", kMaxEntries, true, &p.types, read_type); },
      [&] { return r->objects("members", kMaxEntries * 4, true, &p.members, read_member); },
      [&] { return r->objects("call_sites", kMaxEntries, false, &p.call_sites, read_calls); },
      [&] { return r->objects("markers", kMaxMarkers, false, &p.markers, read_marker); });
  if (!body.ok()) {
    return corrupt(body.error().message);
  }
  // Cross-checks: a member must fit in its type.
  std::map<std::string, uint64_t> sizes;
  for (const auto& t : p.types) {
    if (t.status == ItemStatus::kOk) {
      sizes[t.name] = t.size;
    }
  }
  for (const auto& m : p.members) {
    auto s = sizes.find(m.type);
    if (m.status == ItemStatus::kOk && s != sizes.end() && m.offset + m.size > s->second) {
      return corrupt("member " + m.type + "." + m.path + " lies outside its type");
    }
  }
  return p;
}

Result<Profile> load_profile(const std::string& path, std::string_view expected_build_id) {
  auto text = read_small_file(path, kMaxProfileBytes);
  if (!text.ok()) {
    return text.error();
  }
  auto p = parse_profile(*text);
  if (!p.ok()) {
    return make_error(p.error().kind, path + ": " + p.error().message);
  }
  if (!expected_build_id.empty() && p->build_id != expected_build_id) {
    return make_error(ErrorKind::kInvalidInput, path + ": build-id mismatch: profile is for " +
                                                    p->build_id + ", target is " +
                                                    std::string(expected_build_id));
  }
  return p;
}

Status save_profile(const std::string& path, const Profile& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      return make_error(ErrorKind::kSystem, target.parent_path().string() + ": " + ec.message(),
                        ec.value());
    }
  }
  const std::string text = dump_profile(p);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    const int err = errno;
    return errno_error(tmp, err);
  }
  auto fail = [&](const std::string& name, int err) -> Status {
    ::unlink(tmp.c_str());  // best effort: the error reported is ERR
    return errno_error(name, err);
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return fail(tmp, n < 0 ? errno : EIO);
    }
    done += static_cast<size_t>(n);
  }
  // A write error can surface at close (NFS): closed and checked before the rename.
  if (::fsync(fd.get()) != 0 || ::close(fd.release()) != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(path, errno);
  }
  return ok_status();
}

}  // namespace cephscope::profile
