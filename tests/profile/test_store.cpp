// ProfileStore: cache, shipped profiles, fresh resolves, and what it refuses.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fixture_util.h"
#include "profile/profile_json.h"
#include "profile/store.h"
#include "resolver/debuginfo.h"
#include "resolver/resolver.h"

using namespace cephscope::profile;
namespace fs = std::filesystem;

namespace {

ProbeSet fixture_set() {
  auto set = load_probe_set(FIXTURE_PROBE_SET);
  REQUIRE(set.ok());
  return std::move(set).value();
}

StoreOptions options_in(const test::TempDir& dir) {
  StoreOptions o;
  o.cache_dir = dir / "cache";
  o.shipped_dirs = {dir / "shipped"};
  o.limits.executable = RESOLVER_BIN;
  fs::create_directories(dir / "shipped");
  return o;
}

}  // namespace

TEST_CASE("resolved, then cached, then from memory", "[unit][store]") {
  test::TempDir dir;
  const ProbeSet set = fixture_set();
  std::string build_id;
  {
    ProfileStore store(options_in(dir));
    store.load_shipped();
    auto first = store.for_binary(FIXTURE_O2, set);
    REQUIRE(first.ok());
    CHECK(first->origin == Origin::kResolved);
    CHECK(first->debug_source == to_string(DebugSource::kEmbedded));
    build_id = first->profile.build_id;
    CHECK(fs::exists(store.cache_path(build_id, set.name)));
    auto again = store.for_binary(FIXTURE_O2, set);
    REQUIRE(again.ok());
    CHECK(again->origin == Origin::kMemory);
  }
  ProfileStore fresh(options_in(dir));
  auto cached = fresh.for_binary(FIXTURE_O2, set);
  REQUIRE(cached.ok());
  CHECK(cached->origin == Origin::kCache);
  CHECK(cached->profile.build_id == build_id);

  SECTION("a corrupt cache file is ignored and replaced") {
    ProfileStore s(options_in(dir));
    test::write_file(s.cache_path(build_id, set.name), "{ not json");
    auto r = s.for_binary(FIXTURE_O2, set);
    REQUIRE(r.ok());
    CHECK(r->origin == Origin::kResolved);
    CHECK(load_profile(s.cache_path(build_id, set.name)).ok());
  }
  SECTION("a cached profile of another probe-set version is resolved again") {
    ProbeSet changed = set;  // the table gained a function since the profile was cached
    changed.functions.emplace_back("fx::not_in_the_cached_profile");
    changed.digest = probe_set_digest(changed);
    REQUIRE(changed.digest != set.digest);
    ProfileStore s(options_in(dir));
    auto r = s.for_binary(FIXTURE_O2, changed);
    REQUIRE(r.ok());
    CHECK(r->origin == Origin::kResolved);
    CHECK(r->profile.probe_set_digest == changed.digest);
    CHECK(r->profile.function("fx::not_in_the_cached_profile") != nullptr);
  }
}

TEST_CASE("shipped profiles are used, bad ones rejected", "[unit][store]") {
  test::TempDir dir;
  const ProbeSet set = fixture_set();
  StoreOptions o = options_in(dir);
  {
    ProfileStore maker(o);
    auto p = maker.for_binary(FIXTURE_O0, set);
    REQUIRE(p.ok());
    REQUIRE(save_profile(dir / "shipped/fixture-O0.json", p->profile).ok());
    fs::remove_all(o.cache_dir);
  }
  test::write_file(dir / "shipped/garbage.json", "garbage");
  auto j = profile_to_json(*load_profile(dir / "shipped/fixture-O0.json"));
  j["schema_version"] = 7;
  test::write_file(dir / "shipped/future.json", j.dump());
  test::write_file(dir / "shipped/ignored.txt", "not a profile");

  ProfileStore store(o);
  store.load_shipped();
  CHECK(store.shipped_count() == 1);
  REQUIRE(store.rejected().size() == 2);
  CHECK(store.rejected()[0].error.message.find("unsupported profile schema_version 7") !=
        std::string::npos);
  CHECK(store.rejected()[1].error.message.find("corrupt profile") != std::string::npos);

  auto r = store.for_binary(FIXTURE_O0, set);
  REQUIRE(r.ok());
  CHECK(r->origin == Origin::kShipped);
  CHECK(r->location == dir / "shipped/fixture-O0.json");
  // The shipped profile of one build is never used for another.
  auto other = store.for_binary(FIXTURE_O2, set);
  REQUIRE(other.ok());
  CHECK(other->origin == Origin::kResolved);
}

TEST_CASE("of two shipped directories with a profile of one build, the first listed wins",
          "[unit][store]") {
  test::TempDir dir;
  const ProbeSet set = fixture_set();
  StoreOptions o = options_in(dir);
  fs::create_directories(dir / "repository");
  {
    ProfileStore maker(o);
    auto p = maker.for_binary(FIXTURE_O0, set);
    REQUIRE(p.ok());
    REQUIRE(save_profile(dir / "shipped/fixture-O0.json", p->profile).ok());
    REQUIRE(save_profile(dir / "repository/fixture-O0.json", p->profile).ok());
    fs::remove_all(o.cache_dir);
  }
  const std::string installed = dir / "shipped";
  const std::string repository = dir / "repository";
  const std::vector<std::pair<std::string, std::string>> orders = {{installed, repository},
                                                                   {repository, installed}};
  for (const auto& [first, second] : orders) {
    o.shipped_dirs = {first, second};
    ProfileStore store(o);
    store.load_shipped();
    CHECK(store.shipped_count() == 1);
    auto r = store.for_binary(FIXTURE_O0, set);
    REQUIRE(r.ok());
    CHECK(r->origin == Origin::kShipped);
    CHECK(r->location == first + "/fixture-O0.json");
  }
}

TEST_CASE("a FIFO among the profiles is refused without being opened", "[unit][store]") {
  // Opening a FIFO for reading blocks until a writer comes: were it opened, this test would
  // hang until CTest's timeout.
  test::TempDir dir;
  StoreOptions o = options_in(dir);
  REQUIRE(::mkfifo((dir / "shipped/fifo.json").c_str(), 0600) == 0);
  ProfileStore store(o);
  store.load_shipped();
  CHECK(store.shipped_count() == 0);
  REQUIRE(store.rejected().size() == 1);
  CHECK(store.rejected()[0].error.message.find("a FIFO, not a regular file") != std::string::npos);

  auto direct = load_profile(dir / "shipped/fifo.json");
  REQUIRE_FALSE(direct.ok());
  CHECK(direct.error().reason == "not_regular");
  CHECK_FALSE(load_probe_set(dir / "shipped/fifo.json").ok());
}

TEST_CASE("stored-only mode, and symbol-table profiles upgraded", "[unit][store]") {
  test::TempDir dir;
  const ProbeSet set = fixture_set();
  StoreOptions o = options_in(dir);
  o.resolve = false;
  ProfileStore stored_only(o);
  auto none = stored_only.for_binary(FIXTURE_O2_STRIPPED, set);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().kind == cephscope::ErrorKind::kNotFound);

  // A symbol-table profile in the cache gives way once DWARF is found.
  auto binary = ElfFile::open(FIXTURE_O2_STRIPPED);
  auto symtab = resolve_profile(*binary, nullptr, set);
  REQUIRE(symtab.ok());
  REQUIRE(save_profile(ProfileStore(o).cache_path(symtab->build_id, set.name), *symtab).ok());
  o.resolve = true;
  ProfileStore store(o);
  auto r = store.for_binary(FIXTURE_O2_STRIPPED, set);
  REQUIRE(r.ok());
  CHECK(r->origin == Origin::kResolved);
  CHECK(r->profile.source == "dwarf");
  CHECK(r->debug_source == to_string(DebugSource::kDebuglink));
}

namespace {

DebugSearch o_debug(const test::TempDir& dir) {
  DebugSearch d;
  d.host_root = dir.path().string();
  return d;
}

}  // namespace

TEST_CASE("unreadable debuginfo falls back to the symbol table", "[unit][store]") {
  test::TempDir dir;
  const ProbeSet set = fixture_set();
  auto binary = ElfFile::open(FIXTURE_O2_STRIPPED);
  REQUIRE(binary.ok());
  const std::string id = *binary->build_id();
  // Right build-id and section headers, but the compressed DWARF is damaged.
  const std::string rel =
      "usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  fs::create_directories(fs::path(dir / rel).parent_path());
  std::string damaged = test::read_file(FIXTURE_O2_DEBUG);
  for (size_t i = damaged.size() / 3; i < damaged.size() / 3 + 2048; ++i) {
    damaged[i] = static_cast<char>(0xaa);
  }
  test::write_file(dir / rel, damaged);
  REQUIRE(find_debuginfo(*binary, id, "/nowhere", o_debug(dir)).ok());
  REQUIRE_FALSE(DwarfFile::open(dir / rel).ok());
  StoreOptions o = options_in(dir);
  o.host_root = dir.path().string();
  ProfileStore store(o);
  auto r = store.for_binary(FIXTURE_O2_STRIPPED, set);
  REQUIRE(r.ok());
  CHECK(r->profile.source == "symtab");
  CHECK(r->profile.function("fx::sum8")->status == ItemStatus::kOk);
}
