// Profile JSON: round trip, and every kind of bad input refused with its documented error.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixture_util.h"
#include "profile/probe_set.h"
#include "profile/profile_json.h"
#include "resolver/dwarf_file.h"
#include "resolver/resolver.h"

using namespace cephscope::profile;
using nlohmann::json;

namespace {

const Profile& fixture_profile() {
  static const Profile p = [] {
    auto binary = ElfFile::open(FIXTURE_O2);
    auto dwarf = DwarfFile::open(FIXTURE_O2);
    auto set = load_probe_set(FIXTURE_PROBE_SET);
    auto r = resolve_profile(*binary, &*dwarf, *set);
    REQUIRE(r.ok());
    return std::move(r).value();
  }();
  return p;
}

json valid() {
  return profile_to_json(fixture_profile());
}

std::string error_of(const std::string& text) {
  auto p = parse_profile(text);
  REQUIRE_FALSE(p.ok());
  return p.error().message;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_CASE("profiles survive a round trip", "[unit][json]") {
  const std::string once = dump_profile(fixture_profile());
  auto back = parse_profile(once);
  REQUIRE(back.ok());
  CHECK(dump_profile(*back) == once);
  CHECK(back->functions.size() == fixture_profile().functions.size());
  CHECK(back->member("fx::Derived", "counter")->offset ==
        fixture_profile().member("fx::Derived", "counter")->offset);
}

TEST_CASE("call sites survive a round trip, their ecx only where one was seen", "[unit][json]") {
  Profile p = fixture_profile();
  REQUIRE_FALSE(p.call_sites.empty());
  p.call_sites[0].status = ItemStatus::kOk;
  p.call_sites[0].message.clear();
  p.call_sites[0].sites = {{0x1010, 0x10, 732437, "rbp"},
                           {0x1020, 0x20, std::nullopt, std::nullopt}};
  auto back = parse_profile(dump_profile(p));
  REQUIRE(back.ok());
  const CallSiteEntry* c = back->calls(p.call_sites[0].function, p.call_sites[0].callee);
  REQUIRE(c != nullptr);
  REQUIRE(c->sites.size() == 2);
  CHECK(c->sites[0].vaddr == 0x1010);
  CHECK(c->sites[0].file_offset == 0x10);
  CHECK(c->sites[0].ecx == 732437u);
  CHECK_FALSE(c->sites[1].ecx.has_value());
  CHECK(c->sites[0].rsi_saved_in == "rbp");
  CHECK_FALSE(c->sites[1].rsi_saved_in.has_value());
  CHECK(back->calls(p.call_sites[0].function, "no::such_callee") == nullptr);
}

TEST_CASE("what a binary names is written so it can be read back", "[unit][json]") {
  Profile p = fixture_profile();
  FunctionInstance& i = p.functions[0].instances[0];
  i.symbol = std::string(100000, 's');                       // absurdly long
  i.linkage_name = std::string("bad\xff\xfe utf8\x01\x7f");  // invalid UTF-8, control bytes
  i.caller = "\xed\xa0\x80 surrogate, \xf0\x9f\x98\x80 ok";
  p.members[0].type_name = std::string(5000, 't') + "\xc3";  // cut inside a sequence
  const std::string text = dump_profile(p);
  auto back = parse_profile(text);
  REQUIRE(back.ok());
  const FunctionInstance& b = back->functions[0].instances[0];
  CHECK(b.symbol.size() <= 16384);
  CHECK(b.linkage_name == "bad?? utf8??");
  CHECK(b.caller == "??? surrogate, \xf0\x9f\x98\x80 ok");
  CHECK(dump_profile(*back) == text);
}

TEST_CASE("corrupt profiles are refused", "[unit][json]") {
  const std::string good = valid().dump();
  CHECK(starts_with(error_of(""), "corrupt profile: not valid JSON"));
  CHECK(starts_with(error_of("garbage {"), "corrupt profile: not valid JSON"));
  CHECK(starts_with(error_of(good.substr(0, good.size() / 2)), "corrupt profile"));
  CHECK(starts_with(error_of("[1, 2]"), "corrupt profile: not a JSON object"));
  CHECK(starts_with(error_of(std::string(100000, '[')), "corrupt profile: nested deeper"));
  CHECK(starts_with(error_of(std::string(kMaxProfileBytes + 1, ' ')), "corrupt profile"));

  auto mutated = [](auto&& change) {
    json j = valid();
    change(j);
    return error_of(j.dump());
  };
  CHECK(starts_with(mutated([](json& j) { j["schema"] = "other"; }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j.erase("build_id"); }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["build_id"] = "XYZ"; }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["extra"] = 1; }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["source"] = "guess"; }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["object"] = "../../etc/passwd"; }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["functions"] = json::object(); }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["functions"][0]["instances"][0]["vaddr"] = "0x10"; }),
                    "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["functions"][0]["instances"][0]["vaddr"] = -1; }),
                    "corrupt profile"));
  CHECK(starts_with(
      mutated([](json& j) { j["functions"][0]["instances"][0]["vaddr"] = uint64_t{1} << 60; }),
      "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["functions"][0]["instances"][0]["size"] = 1.5; }),
                    "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["functions"][0]["status"] = "fine"; }),
                    "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["functions"][0]["instances"] = json::array(); }),
                    "corrupt profile"));  // "ok" with no instance
  CHECK(
      starts_with(mutated([](json& j) {
                    j["call_sites"][0]["sites"] = json::array({{{"vaddr", 1}, {"file_offset", 1}}});
                    j["call_sites"][0]["status"] = "not_found";  // sites, yet not found
                  }),
                  "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) {
                      j["call_sites"][0]["status"] = "ok";
                      j["call_sites"][0]["sites"] =
                          json::array({{{"vaddr", 1}, {"file_offset", 1}, {"ecx", 1ULL << 32}}});
                    }),
                    "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) {
                      j["call_sites"][0]["status"] = "ok";
                      j["call_sites"][0]["sites"] = json::array(
                          {{{"vaddr", 1}, {"file_offset", 1}, {"rsi_saved_in", "rdi"}}});
                    }),
                    "corrupt profile"));  // rdi is the callee's to change
  CHECK(starts_with(
      mutated([](json& j) { j["functions"][0]["instances"][0]["entry_insn"] = "jmp *%rax"; }),
      "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) {
                      for (auto& m : j["members"]) {
                        if (m["status"] == "ok") {
                          m["offset"] = 1u << 30;  // beyond its type's size
                          break;
                        }
                      }
                    }),
                    "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["members"][0]["path"] = "a..b"; }), "corrupt profile"));
  CHECK(starts_with(mutated([](json& j) { j["types"][0]["name"] = std::string(1000, 'x'); }),
                    "corrupt profile"));
}

TEST_CASE("a refusal names the first bad field by its JSON path", "[unit][json]") {
  json j = valid();
  j["functions"][0]["instances"][0]["vaddr"] = "0x10";
  j["types"][0]["size"] = -1;  // also bad, but after the first failure nothing is read
  CHECK(error_of(j.dump()) ==
        "corrupt profile: $.functions[0].instances[0].vaddr: expected a non-negative integer");
  j = valid();
  j["members"][0].erase("path");
  CHECK(error_of(j.dump()) == "corrupt profile: $.members[0].path: missing");
  j = valid();
  j["functions"][0]["instances"][0]["params"] = json::array();  // schema 1's, gone in 2
  CHECK(error_of(j.dump()) == "corrupt profile: $.functions[0].instances[0].params: unknown field");
  j = valid();
  j["call_sites"][0]["sites"] = json::array({1});
  CHECK(error_of(j.dump()) == "corrupt profile: $.call_sites[0].sites[0]: expected an object");
  auto set = parse_probe_set(
      R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x","objects":["a"],
          "types":[{"name":"T","members":["a"]},{"name":"U","members":["a..b"]}]})");
  REQUIRE_FALSE(set.ok());
  CHECK(set.error().message == "probe set.types[1].members[0]: not a member path");
}

TEST_CASE("unknown schema versions are refused", "[unit][json]") {
  for (int v : {0, 1, 2, 4, 99}) {
    json j = valid();
    j["schema_version"] = v;
    auto p = parse_profile(j.dump());
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().kind == cephscope::ErrorKind::kUnsupported);
    CHECK(
        starts_with(p.error().message, "unsupported profile schema_version " + std::to_string(v)));
  }
}

TEST_CASE("a profile for another build-id is refused", "[unit][json]") {
  test::TempDir dir;
  const std::string path = dir / "p.json";
  REQUIRE(save_profile(path, fixture_profile()).ok());
  CHECK(load_profile(path, fixture_profile().build_id).ok());
  auto other = load_profile(path, std::string(40, 'a'));
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message.find("build-id mismatch") != std::string::npos);
  auto missing = load_profile(dir / "none.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().kind == cephscope::ErrorKind::kNotFound);
}

TEST_CASE("probe-set specs are validated", "[unit][json]") {
  auto osd = load_probe_set(std::string(FIXTURE_DIR) + "/ceph-osd-layouts.json");
  REQUIRE(osd.ok());
  CHECK(osd->applies_to("ceph-osd"));
  CHECK_FALSE(osd->applies_to("ceph-mon"));
  // A spec written out reads back to the same set, digest included.
  auto again = parse_probe_set(probe_set_to_json(*osd));
  REQUIRE(again.ok());
  CHECK(again->digest == osd->digest);
  CHECK(again->types.size() == osd->types.size());
  auto fixture = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(fixture.ok());
  CHECK(osd->digest != fixture->digest);

  const std::string base = R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x",
    "objects":["a"],"functions":["A::f"],"types":[{"name":"T","members":["a.b"]}]})";
  CHECK(parse_probe_set(base).ok());
  for (const std::string bad :
       {R"({"schema":"cephscope-probe-set","schema_version":2,"name":"x","objects":["a"]})",
        R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x","objects":[]})",
        R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x","objects":["a/b"]})",
        R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x","objects":["a"],
               "types":[{"name":"T","members":["a..b"]}]})",
        R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x","objects":["a"],
               "functions":[7]})",
        R"({"schema":"cephscope-probe-set","schema_version":1,"name":"x","objects":["a"],
               "surprise":true})",
        "not json"}) {
    INFO(bad);
    CHECK_FALSE(parse_probe_set(bad).ok());
  }
}
