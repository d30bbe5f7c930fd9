// Label values from outside: whatever bytes a process is named with, the value written is
// valid UTF-8, free of control characters, bounded, and survives the text format's escaping.
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "core/label_value.h"
#include "core/reason.h"
#include "discovery/classify.h"
#include "metrics/prometheus_sink.h"
#include "support/metrics_text.h"
#include "support/subprocess.h"

using namespace cephscope;

namespace {

// An independent UTF-8 check: decode every sequence to its code point, then reject overlong
// forms, surrogates, values above U+10FFFF and, for labels, control characters.
bool valid_label_text(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = 1;
    std::uint32_t cp = b0;
    if (b0 >= 0xF0) {
      len = 4;
      cp = b0 & 0x07u;
    } else if (b0 >= 0xE0) {
      len = 3;
      cp = b0 & 0x0Fu;
    } else if (b0 >= 0xC0) {
      len = 2;
      cp = b0 & 0x1Fu;
    } else if (b0 >= 0x80) {
      return false;  // a continuation byte first
    }
    if (i + len > s.size()) {
      return false;
    }
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0u) != 0x80u) {
        return false;
      }
      cp = (cp << 6) | (b & 0x3Fu);
    }
    const std::uint32_t min = len == 1 ? 0 : len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      return false;
    }
    i += len;
  }
  return true;
}

// Random bytes weighted towards trouble: quotes, backslashes, newlines, NUL, high bytes, and
// valid multi-byte characters that a cut could split.
std::string random_name(std::mt19937_64& rng) {
  static const std::vector<std::string> kPieces = {"\"",
                                                   "\\",
                                                   "\n",
                                                   "\r",
                                                   "\t",
                                                   std::string(1, '\0'),
                                                   "\x7f",
                                                   "}",
                                                   ",",
                                                   "=",
                                                   "{",
                                                   "\xc3\xa9",          // é
                                                   "\xe2\x82\xac",      // €
                                                   "\xf0\x9f\x90\x99",  // U+1F419
                                                   "\xc2\x85",          // U+0085, a C1 control
                                                   "\xed\xa0\x80",      // a surrogate
                                                   "\xc0\xaf",          // overlong '/'
                                                   "\xf4\x90\x80\x80",  // above U+10FFFF
                                                   "\xe2\x82",          // truncated
                                                   "osd",
                                                   "rbd",
                                                   " "};
  std::uniform_int_distribution<int> length(0, 200);
  std::uniform_int_distribution<int> kind(0, 2);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<std::size_t> piece(0, kPieces.size() - 1);
  std::string out;
  const int n = length(rng);
  while (static_cast<int>(out.size()) < n) {
    if (kind(rng) == 0) {
      out += kPieces[piece(rng)];
    } else {
      out += static_cast<char>(byte(rng));
    }
  }
  return out;
}

std::string serialise(const std::string& raw) {
  PrometheusSink sink(10);
  sink.gauge("test_info", "A test.", {{"process", raw}}, 1);
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, sink.take());
  return text.str();
}

}  // namespace

TEST_CASE("label_value: random bytes become a valid, bounded, stable label value",
          "[unit][labels]") {
  std::mt19937_64 rng(Catch::rngSeed());
  for (int round = 0; round < 20000; ++round) {
    const std::string raw = random_name(rng);
    const std::string v = label_value(raw);
    INFO("round " << round << ", input of " << raw.size() << " bytes");
    REQUIRE(valid_label_text(v));
    REQUIRE(v.size() <= kMaxLabelValueBytes);
    REQUIRE(label_value(v) == v);  // idempotent: discovery and the sink may both apply it
    REQUIRE(v.empty() == raw.empty());
    if (valid_label_text(raw)) {
      // Clean input is kept, or cut at a character boundary short of the bound.
      CHECK(raw.starts_with(v));
      CHECK((v == raw || v.size() + 4 > kMaxLabelValueBytes));
    }
  }
}

TEST_CASE("label_value: what is replaced and what is kept", "[unit][labels]") {
  const std::string fffd = "\xef\xbf\xbd";
  CHECK(label_value("ceph-osd") == "ceph-osd");
  CHECK(label_value("a\"b\\c") == "a\"b\\c");  // escaped by the serialiser, not here
  CHECK(label_value("\xc3\xa9t\xc3\xa9") == "\xc3\xa9t\xc3\xa9");
  CHECK(label_value("a\nb") == "a" + fffd + "b");
  CHECK(label_value(std::string("a\0b", 3)) == "a" + fffd + "b");
  CHECK(label_value("\xff") == fffd);
  CHECK(label_value("\xc0\xaf") == fffd + fffd);             // overlong: each byte
  CHECK(label_value("\xed\xa0\x80") == fffd + fffd + fffd);  // surrogate
  CHECK(label_value("\xc2\x85") == fffd);                    // C1 control
  CHECK(label_value("x\xe2\x82") == "x" + fffd + fffd);
  // 127 ASCII bytes and a 2-byte character: the character does not fit, and is not split.
  CHECK(label_value(std::string(127, 'a') + "\xc3\xa9") == std::string(127, 'a'));
  CHECK(label_value(std::string(300, 'a')).size() == kMaxLabelValueBytes);
}

TEST_CASE("label values survive the text format's escaping", "[unit][labels]") {
  std::mt19937_64 rng(Catch::rngSeed() + 1);
  for (int round = 0; round < 2000; ++round) {
    const std::string raw = random_name(rng);
    if (raw.empty()) {
      continue;
    }
    const std::string text = serialise(raw);
    INFO(text);
    // One sample line: the value read back is the sanitised one, and the line is one line.
    const auto m = test::Metrics::parse(text);
    REQUIRE(m.samples().size() == 1);
    CHECK(m.samples()[0].labels.at("process") == label_value(raw));
    CHECK(std::count(text.begin(), text.end(), '\n') == 3);  // HELP, TYPE, the sample
  }
  CHECK_THAT(serialise("a\"b\\c"), Catch::Contains(R"(process="a\"b\\c")"));
}

TEST_CASE("promtool accepts series labelled with random process names", "[unit][labels]") {
  const std::string promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) {
    WARN("no " << promtool << ": the kernel layer checks /metrics with it");
    return;
  }
  std::mt19937_64 rng(Catch::rngSeed() + 2);
  PrometheusSink sink(100000);
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i) {
    const std::string v = label_value(random_name(rng));
    if (!v.empty() && seen.insert(v).second) {
      sink.counter("test_bytes_total", "Bytes.", {{"process", v}, {"reason", "ok"}}, i);
    }
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, sink.take());
  const std::string path =
      std::filesystem::temp_directory_path() / ("labels-" + std::to_string(getpid()) + ".txt");
  std::ofstream(path) << text.str();
  std::string out;
  const int rc = test::run_command(promtool + " check metrics < " + path + " 2>&1", &out);
  std::filesystem::remove(path);
  INFO("promtool said:\n" << out);
  CHECK(rc == 0);
}

TEST_CASE("discovery names a target with a label value", "[unit][labels]") {
  const std::string comm = "a\"b\n\xff";
  Config::Discovery config;
  config.rados_clients = false;
  config.ceph_osd = false;
  config.matchers.push_back({});  // matches every process, named by its comm
  const ProcReader proc("/nonexistent");
  const Classifier classifier(proc, config);
  ProcessInfo info;
  info.pid = 1;
  info.comm = comm;
  info.exe = "/bin/true";
  const auto identity = classifier.classify(info);
  REQUIRE(identity);
  CHECK(identity->process == label_value(comm));
}

TEST_CASE("every reason word is one label value of the fixed set", "[unit][labels]") {
  for (std::size_t i = 0; i < kReasonWords.size(); ++i) {
    const auto r = static_cast<Reason>(i);
    CHECK(reason_from_word(to_string(r)) == r);
    CHECK(label_value(to_string(r)) == to_string(r));
  }
  CHECK(reason_of(make_error(ErrorKind::kSystem, "x", EPERM), Reason::kLoadFailed) ==
        Reason::kPermissionDenied);
  CHECK(reason_of(make_error(ErrorKind::kSystem, "x", EINVAL), Reason::kLoadFailed) ==
        Reason::kLoadFailed);
  CHECK(reason_of(error_with(Reason::kResolverFailed, ErrorKind::kSystem, "x", EPERM),
                  Reason::kLoadFailed) == Reason::kResolverFailed);
}
