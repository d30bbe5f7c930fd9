// Log line formats as Prometheus exporters write them (--log.format): logfmt
// (ts=... level=info msg="...") or one JSON object per line, always UTC timestamps.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include <spdlog/formatter.h>

namespace cephscope {

enum class LogFormat { kLogfmt, kJson };

std::optional<LogFormat> parse_log_format(std::string_view name);

std::unique_ptr<spdlog::formatter> make_log_formatter(LogFormat format);

}  // namespace cephscope
