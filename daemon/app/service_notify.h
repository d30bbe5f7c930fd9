// systemd's notification protocol (sd_notify(3)), for Type=notify: READY=1 once the first
// discovery and attach pass is done, STATUS= lines, RELOADING=1 around a SIGHUP reload and
// WATCHDOG=1 pings at half of WatchdogSec. Without $NOTIFY_SOCKET every call does nothing.
#pragma once

#include <chrono>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace cephscope {

class ServiceNotifier {
 public:
  using Clock = std::chrono::steady_clock;

  // Reads $NOTIFY_SOCKET and $WATCHDOG_USEC (for this process: $WATCHDOG_PID) and removes
  // them from the environment, so the resolver and other children never notify for us.
  static Result<ServiceNotifier> from_environment();

  void ready(const std::string& status);
  void status(const std::string& status);
  void reloading();
  void stopping();
  // A WATCHDOG=1 when half the interval has passed since the last one.
  void watchdog(Clock::time_point now);

  [[nodiscard]] bool active() const { return fd_.valid(); }
  [[nodiscard]] std::chrono::microseconds watchdog_interval() const { return watchdog_; }

 private:
  void send(const std::string& message);

  UniqueFd fd_;
  std::string socket_path_;
  std::chrono::microseconds watchdog_{0};
  Clock::time_point last_ping_{};
  std::string last_status_;
};

}  // namespace cephscope
