#include "libbpf/libbpf_log.h"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string>
#include <string_view>

namespace cephscope {
namespace {

// A verifier log runs to megabytes and says why at its end: long messages keep their head
// (which program) and their tail (why it was refused).
constexpr std::size_t kHeadBytes = 1024;
constexpr std::size_t kTailBytes = 3072;

int log_to_spdlog(enum libbpf_print_level level, const char* format, va_list args) {
  va_list sized;
  va_copy(sized, args);
  const int n = std::vsnprintf(nullptr, 0, format, sized);
  va_end(sized);
  if (n <= 0) {
    return n;
  }
  std::string text(static_cast<std::size_t>(n) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, args);
  text.pop_back();
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  if (text.size() > kHeadBytes + kTailBytes) {
    text = text.substr(0, kHeadBytes) + "\n[...]\n" + text.substr(text.size() - kTailBytes);
  }
  const std::string_view msg(text);
  switch (level) {
    case LIBBPF_WARN:
      spdlog::warn("{}", msg);
      break;
    case LIBBPF_INFO:
      spdlog::debug("{}", msg);
      break;
    case LIBBPF_DEBUG:
      spdlog::trace("{}", msg);
      break;
  }
  return n;
}

}  // namespace

void route_libbpf_log_to_spdlog() {
  libbpf_set_print(log_to_spdlog);
}

}  // namespace cephscope
