#include "libbpf/libbpf_log.h"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <string_view>

namespace cephscope {
namespace {

int log_to_spdlog(enum libbpf_print_level level, const char* format, va_list args) {
  std::array<char, 1024> buf{};
  const int n = std::vsnprintf(buf.data(), buf.size(), format, args);
  if (n <= 0) {
    return n;
  }
  std::string_view msg(buf.data());
  while (!msg.empty() && msg.back() == '\n') {
    msg.remove_suffix(1);
  }
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
