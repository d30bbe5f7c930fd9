// What Prometheus relies on, with the real daemon: a scrape it can parse whatever the tracked
// processes are called, counters that never go back while their series exist (across SIGHUP
// reloads and a target's TTL), and series that go away whole.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "core/label_value.h"
#include "kernel/io_workload.h"

using namespace cephscope::test;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string series_key(const Sample& s) {
  std::string key = s.name + "{";
  for (const auto& [k, v] : s.labels) {
    key.append(k).append("=").append(v).append(",");
  }
  return key + "}";
}

bool cumulative(const Sample& s) {
  return ends_with(s.name, "_total") || ends_with(s.name, "_count") || ends_with(s.name, "_sum") ||
         ends_with(s.name, "_bucket");
}

// Every counter and histogram series present in both scrapes is no lower in the later one.
std::vector<std::string> went_back(const Metrics& before, const Metrics& after) {
  std::map<std::string, double> later;
  for (const auto& s : after.samples()) {
    later[series_key(s)] = s.value;
  }
  std::vector<std::string> out;
  for (const auto& s : before.samples()) {
    if (!cumulative(s)) {
      continue;
    }
    auto it = later.find(series_key(s));
    if (it != later.end() && it->second < s.value) {
      out.push_back(it->first + ": " + std::to_string(s.value) + " -> " +
                    std::to_string(it->second));
    }
  }
  return out;
}

// Every histogram in the scrape is whole: 26 buckets, _sum and _count, or nothing.
std::vector<std::string> partial_histograms(const Metrics& m) {
  struct Parts {
    int buckets = 0;
    int sums = 0;
    int counts = 0;
  };
  std::map<std::string, Parts> groups;
  for (const auto& s : m.samples()) {
    for (const char* tail : {"_bucket", "_sum", "_count"}) {
      if (!ends_with(s.name, tail)) {
        continue;
      }
      Sample base = s;
      base.name = s.name.substr(0, s.name.size() - std::string(tail).size());
      base.labels.erase("le");
      auto& p = groups[series_key(base)];
      (std::string(tail) == "_bucket" ? p.buckets : tail[1] == 's' ? p.sums : p.counts) += 1;
    }
  }
  std::vector<std::string> out;
  for (const auto& [key, p] : groups) {
    if (p.buckets != 26 || p.sums != 1 || p.counts != 1) {
      out.push_back(key + ": " + std::to_string(p.buckets) + " buckets, " + std::to_string(p.sums) +
                    " _sum, " + std::to_string(p.counts) + " _count");
    }
  }
  return out;
}

// The data series that carry label=value. cephscope_target_info is left out: it names the
// target's live pids, and goes when the daemon sees the process exit, which may fall between
// any two scrapes; the data stays for the TTL.
std::set<std::string> series_of(const Metrics& m, const std::string& label,
                                const std::string& value) {
  std::set<std::string> out;
  for (const auto& s : m.samples()) {
    if (s.name == "cephscope_target_info") {
      continue;
    }
    if (auto it = s.labels.find(label); it != s.labels.end() && it->second == value) {
      out.insert(series_key(s));
    }
  }
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// Sends SIGHUP and waits for the reload it asks for to be logged.
void reload(Daemon& daemon) {
  const std::size_t before = count_of(daemon.log(), "config reloaded");
  REQUIRE(kill(daemon.pid(), SIGHUP) == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (count_of(daemon.log(), "config reloaded") == before) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string with_ttl(std::string config, const std::string& ttl) {
  const std::string from = "series_ttl: 3s";
  config.replace(config.find(from), from.size(), "series_ttl: " + ttl);
  return config;
}

void check_no_step_back(const Metrics& before, const Metrics& after) {
  const auto back = went_back(before, after);
  INFO(Catch::Detail::stringify(back));
  CHECK(back.empty());
}

const std::map<std::string, std::string> kPwrite = {{"process", "io_driver"},
                                                    {"syscall", "pwrite64"}};

}  // namespace

TEST_CASE("counters never go back across SIGHUP reloads, unchanged or changed",
          "[kernel][series][sighup][userspace]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  const std::string body = with_ttl(tracking_config(), "60s");
  Daemon daemon(dir, body);
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  const std::string listen =
      std::string("listen: \"127.0.0.1:") + std::to_string(daemon.port()) + "\"\n";
  const IoPattern io{8, 4096, 1, 2};
  run_io(daemon, dir, io);
  const Metrics first = daemon.scrape();
  // The daemon gives the series it finds in the block hash their slots (every 2 s): the second
  // run's requests are counted there, and handed over when the target expires.
  REQUIRE(wait_for(
      daemon,
      [](const Metrics& m) {
        return m.sum("cephscope_map_entries", {{"map", "block_series"}}) > 0;
      },
      std::chrono::seconds(20)));
  REQUIRE(first.sum("cephscope_syscall_seconds_count", kPwrite) == io.writes);
  const auto tracked = series_of(first, "process", "io_driver");

  std::ofstream(daemon.config_path()) << listen << body;
  reload(daemon);
  const Metrics unchanged = daemon.scrape();
  check_no_step_back(first, unchanged);
  CHECK(series_of(unchanged, "process", "io_driver") == tracked);  // within the TTL: all kept
  CHECK(partial_histograms(unchanged).empty());

  // Another scan interval and TTL, a series cap far above this scrape, one more matcher.
  std::string changed = with_ttl(tracking_config(), "30s");
  changed.replace(changed.find("scan_interval: 1s"), 17, "scan_interval: 2s");
  std::ofstream(daemon.config_path()) << listen << "limits:\n  max_series: 40000\n"
                                      << changed << "    - {comm: \"^io_other$\"}\n";
  reload(daemon);
  const Metrics reloaded = daemon.scrape();
  check_no_step_back(unchanged, reloaded);
  CHECK(series_of(reloaded, "process", "io_driver") == tracked);
  CHECK(partial_histograms(reloaded).empty());

  // The same target counts on from where it was.
  run_io(daemon, dir, io);
  const Metrics more = daemon.scrape();
  check_no_step_back(reloaded, more);
  CHECK(more.sum("cephscope_syscall_seconds_count", kPwrite) == 2 * io.writes);
}

TEST_CASE("counters never go back across a target's TTL, and its series go away whole",
          "[kernel][series][ttl][userspace]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  Daemon daemon(dir,
                with_ttl(tracking_config(), "5s") + "  ceph_osd: false\n  rados_clients: false\n");
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  const IoPattern io{8, 4096, 1, 2};
  run_io(daemon, dir, io);
  const Metrics first = daemon.scrape();
  // The daemon gives the series it finds in the block hash their slots (every 2 s): the second
  // run's requests are counted there, and handed over when the target expires.
  REQUIRE(wait_for(
      daemon,
      [](const Metrics& m) {
        return m.sum("cephscope_map_entries", {{"map", "block_series"}}) > 0;
      },
      std::chrono::seconds(20)));
  // Back within the TTL (5 s): the same target, counting on.
  run_io(daemon, dir, io);
  Metrics last = daemon.scrape();
  check_no_step_back(first, last);
  CHECK(last.sum("cephscope_syscall_seconds_count", kPwrite) == 2 * io.writes);
  const auto tracked = series_of(last, "process", "io_driver");
  REQUIRE(tracked.size() > 30);

  // Until the series go: every scrape has all of them or none, whole histograms, and no
  // counter lower than the scrape before.
  bool gone = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    const Metrics m = daemon.scrape();
    check_no_step_back(last, m);
    const auto partial = partial_histograms(m);
    INFO(Catch::Detail::stringify(partial));
    CHECK(partial.empty());
    const auto now = series_of(m, "process", "io_driver");
    gone = now.empty();
    if (!gone) {
      // Only the series of the last scrape can be missing from the set: none may be.
      for (const auto& key : tracked) {
        INFO(key);
        CHECK(now.contains(key));
      }
    }
    last = m;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(gone);
  // Once the daemon deleted the expired target's map entries and took back its series slots,
  // the per-device series, which counted its requests too, are still no lower.
  REQUIRE(wait_for(
      daemon,
      [](const Metrics& m) {
        return m.sum("cephscope_map_entries", {{"map", "syscall_stats"}}) == 0 &&
               m.sum("cephscope_map_entries", {{"map", "syscall_series"}}) == 0;
      },
      std::chrono::seconds(20)));
  const Metrics pruned = daemon.scrape();
  check_no_step_back(last, pruned);
  check_no_step_back(first, pruned);
  CHECK(partial_histograms(pruned).empty());

  // Back after its series went away whole: a new series that starts from zero.
  run_io(daemon, dir, io);
  const Metrics again = daemon.scrape();
  CHECK(again.sum("cephscope_syscall_seconds_count", kPwrite) == io.writes);
  check_no_step_back(pruned, again);
}

namespace {

// A name of 1 to 15 bytes (a whole comm) that a file may have: no '/', no NUL, not . or ..
std::string random_comm(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> length(1, 15);
  std::uniform_int_distribution<int> byte(1, 255);
  std::string out;
  const int n = length(rng);
  while (static_cast<int>(out.size()) < n) {
    const char c = static_cast<char>(byte(rng));
    if (c != '/') {
      out += c;
    }
  }
  return out == "." || out == ".." ? "x" + out : out;
}

}  // namespace

TEST_CASE("/metrics passes promtool with processes named by random bytes",
          "[kernel][labels][promtool]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  // Every io_driver is a target, named by its comm: the name it was executed under.
  Daemon daemon(dir,
                "collectors:\n"
                "  osd: {enabled: false}\n"
                "discovery:\n"
                "  scan_interval: 1s\n"
                "  series_ttl: 60s\n"
                "  ceph_osd: false\n"
                "  rados_clients: false\n"
                "  matchers:\n"
                "    - {exe: " +
                    yaml_regex_literal(CEPHSCOPE_IO_DRIVER) + "}\n");
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());

  std::vector<std::string> names = {"a\"b",         "x\ny",        "back\\slash",
                                    "\xff\xfe\xfd", "{le=\"1\"}",  "\xc3\xa9t\xc3\xa9",
                                    "tab\there",    "\x1b[31mred", "\xe2\x82"};
  std::mt19937_64 rng(Catch::rngSeed());
  std::set<std::string> unique(names.begin(), names.end());
  while (names.size() < 24) {
    if (auto n = random_comm(rng); unique.insert(n).second) {
      names.push_back(n);
    }
  }
  const std::string links = dir + "/names";
  std::filesystem::remove_all(links);
  std::filesystem::create_directory(links);
  const std::string go = dir + "/go-names";
  std::filesystem::remove(go);
  const IoPattern io{2, 4096, 0, 1};
  std::vector<std::unique_ptr<Subprocess>> drivers;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string link = links + "/" + names[i];
    std::filesystem::create_symlink(CEPHSCOPE_IO_DRIVER, link);
    const std::string data = dir + "/names-" + std::to_string(i) + ".dat";
    std::ofstream(data).close();
    std::filesystem::resize_file(data, io.writes * io.size);
    drivers.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{link, data, go, std::to_string(io.writes), std::to_string(io.size),
                                 std::to_string(io.syncs), std::to_string(io.reads)},
        dir + "/names-" + std::to_string(i) + ".log"));
  }
  const bool all_seen = wait_for(
      daemon,
      [&](const Metrics& m) {
        for (const auto& d : drivers) {
          if (m.find("cephscope_target_info", {{"pid", std::to_string(d->pid())}}).empty()) {
            return false;
          }
        }
        return true;
      },
      std::chrono::seconds(15));
  REQUIRE(all_seen);
  std::ofstream(go).put('\n');
  for (const auto& d : drivers) {
    REQUIRE(d->wait(std::chrono::seconds(60)) == 0);
  }

  const std::string text = daemon.scrape_text();
  const std::string path = dir + "/metrics-names.txt";
  std::ofstream(path) << text;
  std::string out;
  const int rc = run_command("promtool check metrics < " + path + " 2>&1", &out);
  std::printf(
      "promtool check metrics (%zu bytes, %zu processes named by random bytes): "
      "exit %d\n%s",
      text.size(), names.size(), rc, out.c_str());
  INFO("promtool said:\n" << out);
  REQUIRE(rc == 0);

  // Each process under its name as a label value: its comm, made valid and bounded.
  const Metrics m = Metrics::parse(text);
  for (const auto& name : names) {
    const std::string label = cephscope::label_value(name);
    INFO("comm of " << name.size() << " bytes, label \"" << label << "\"");
    CHECK(m.sum("cephscope_syscall_seconds_count", {{"process", label}, {"syscall", "pwrite64"}}) >=
          io.writes);
  }
  for (const auto& s : m.samples()) {
    for (const auto& [k, v] : s.labels) {
      CHECK(cephscope::label_value(v) == v);
    }
  }
  std::filesystem::remove_all(links);
}

TEST_CASE("the series cap leaves out the least valuable series first, whatever scrapes first",
          "[kernel][series][cap][userspace]") {
  const std::string dir = fresh_dir();
  require_block_device(dir);
  const std::string body = with_ttl(tracking_config(), "60s");
  Daemon daemon(dir, body);
  DaemonLogOnFailure log_on_failure(daemon);
  REQUIRE(daemon.wait_ready());
  run_io(daemon, dir, IoPattern{8, 4096, 1, 2});
  const Metrics uncapped = daemon.scrape();
  const double block = uncapped.sum("cephscope_scrape_series", {{"collector", "block"}});
  const double syscall = uncapped.sum("cephscope_scrape_series", {{"collector", "syscall"}});
  REQUIRE(block > 0);
  REQUIRE(syscall > 0);  // the syscall collector scrapes before the block collector

  // Room for the block collector's series only: first come, the syscall series would take it.
  std::ofstream(daemon.config_path()) << "listen: \"127.0.0.1:" << daemon.port() << "\"\n"
                                      << "limits:\n  max_series: " << block << "\n"
                                      << body;
  reload(daemon);
  const Metrics capped = daemon.scrape();
  std::printf(
      "series cap %.0f: block kept %.0f of %.0f, syscall kept %.0f of %.0f (dropped %.0f)\n", block,
      capped.sum("cephscope_scrape_series", {{"collector", "block"}}), block,
      capped.sum("cephscope_scrape_series", {{"collector", "syscall"}}), syscall,
      capped.sum("cephscope_scrape_series_dropped_by_collector", {{"collector", "syscall"}}));
  CHECK(capped.sum("cephscope_scrape_series", {{"collector", "block"}}) > block / 2);
  CHECK(capped.sum("cephscope_scrape_series", {{"collector", "syscall"}}) == 0);
  CHECK(capped.find("cephscope_syscall_seconds_count").empty());
  CHECK(!capped.find("cephscope_block_device_seconds_count").empty());
  CHECK(capped.sum("cephscope_scrape_series_dropped_by_collector", {{"collector", "syscall"}}) >=
        syscall);
  CHECK(capped.sum("cephscope_scrape_series_dropped", {}) >= syscall);
}
