#include "app/service_notify.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace cephscope {
namespace {

std::string take_env(const char* name) {
  const char* value = std::getenv(name);
  std::string out = value != nullptr ? value : "";
  ::unsetenv(name);
  return out;
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

Result<ServiceNotifier> ServiceNotifier::from_environment() {
  ServiceNotifier n;
  const std::string socket_path = take_env("NOTIFY_SOCKET");
  const std::string usec = take_env("WATCHDOG_USEC");
  const std::string pid = take_env("WATCHDOG_PID");
  if (socket_path.empty()) {
    return n;
  }
  // A path, or an abstract socket written with a leading '@'.
  if ((socket_path[0] != '/' && socket_path[0] != '@') ||
      socket_path.size() >= sizeof(sockaddr_un::sun_path)) {
    return make_error(ErrorKind::kInvalidInput,
                      "NOTIFY_SOCKET: not a socket path or abstract name: '" + socket_path + "'");
  }
  n.fd_ = UniqueFd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!n.fd_.valid()) {
    return errno_error("NOTIFY_SOCKET: socket", errno);
  }
  n.socket_path_ = socket_path;
  long watchdog_pid = 0;
  unsigned long long microseconds = 0;
  const bool ours = pid.empty() || (parse_number(pid, watchdog_pid) && watchdog_pid == ::getpid());
  if (!usec.empty() && ours) {
    if (!parse_number(usec, microseconds) || microseconds == 0) {
      return make_error(ErrorKind::kInvalidInput,
                        "WATCHDOG_USEC: not a positive number: '" + usec + "'");
    }
    n.watchdog_ = std::chrono::microseconds(microseconds);
  }
  return n;
}

void ServiceNotifier::send(const std::string& message) {
  if (!fd_.valid()) {
    return;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  if (addr.sun_path[0] == '@') {
    addr.sun_path[0] = '\0';
  }
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  if (::sendto(fd_.get(), message.data(), message.size(), MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&addr), len) < 0) {
    spdlog::warn("systemd notification '{}' not sent: {}", message.substr(0, message.find('\n')),
                 std::strerror(errno));
  }
}

void ServiceNotifier::ready(const std::string& status) {
  last_status_ = status;
  send("READY=1\nSTATUS=" + status);
}

void ServiceNotifier::status(const std::string& status) {
  if (status != last_status_) {
    last_status_ = status;
    send("STATUS=" + status);
  }
}

void ServiceNotifier::reloading() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long long usec = static_cast<long long>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

void ServiceNotifier::stopping() {
  send("STOPPING=1");
}

void ServiceNotifier::watchdog(Clock::time_point now) {
  if (watchdog_.count() == 0 || now - last_ping_ < watchdog_ / 2) {
    return;
  }
  last_ping_ = now;
  send("WATCHDOG=1");
}

}  // namespace cephscope
