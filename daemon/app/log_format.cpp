#include "app/log_format.h"

#include <spdlog/details/log_msg.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/label_value.h"

namespace cephscope {
namespace {

// go-kit's level names, which Prometheus' own logs use.
std::string_view level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    default:
      return "error";
  }
}

void append(spdlog::memory_buf_t& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

void append_time(spdlog::memory_buf_t& out, spdlog::log_clock::time_point when) {
  const auto since = when.time_since_epoch();
  const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since).count();
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                              utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  append(out, std::string_view(buf, static_cast<std::size_t>(n)));
}

// A quoted string as both logfmt and JSON read it: valid UTF-8 (a byte of an invalid
// sequence becomes U+FFFD: messages carry process names, which any local user picks), the
// quote, the backslash and control characters escaped.
void append_quoted(spdlog::memory_buf_t& out, std::string_view text) {
  out.push_back('"');
  while (!text.empty()) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence_length(text, cp);
    if (n == 0) {
      append(out, kUtf8Replacement);
      text.remove_prefix(1);
      continue;
    }
    if (cp == '"' || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      append(out, "\\n");
    } else if (cp == '\t') {
      append(out, "\\t");
    } else if (cp < 0x20 || cp == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      append(out, buf);
    } else {
      append(out, text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  out.push_back('"');
}

class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(LogFormat format) : format_(format) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& out) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (format_ == LogFormat::kJson) {
      append(out, R"({"ts":")");
      append_time(out, msg.time);
      append(out, R"(","level":")");
      append(out, level_name(msg.level));
      append(out, R"(","msg":)");
      append_quoted(out, text);
      append(out, "}\n");
      return;
    }
    append(out, "ts=");
    append_time(out, msg.time);
    append(out, " level=");
    append(out, level_name(msg.level));
    append(out, " msg=");
    append_quoted(out, text);
    out.push_back('\n');
  }

  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_);
  }

 private:
  LogFormat format_;
};

}  // namespace

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "logfmt") {
    return LogFormat::kLogfmt;
  }
  if (name == "json") {
    return LogFormat::kJson;
  }
  return std::nullopt;
}

std::unique_ptr<spdlog::formatter> make_log_formatter(LogFormat format) {
  return std::make_unique<LineFormatter>(format);
}

}  // namespace cephscope
