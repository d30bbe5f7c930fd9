// The fds the daemon loop waits on: a signalfd for SIGTERM, SIGINT and SIGHUP (read in the
// loop, never in async handlers) and an epoll set. Every call is checked: a daemon that
// cannot see its signals must not start.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

#include "core/result.h"

namespace cephscope {

// An fd that closes itself.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// Blocks SIGTERM, SIGINT and SIGHUP in this thread and the threads it starts later, and
// returns a non-blocking signalfd that receives them.
Result<Fd> open_signal_fd();

// The number of the next pending signal; nothing once none is left.
Result<std::optional<std::uint32_t>> next_signal(const Fd& signal_fd);

// An epoll fd that reports input on each of `fds` (its data.fd is that fd).
Result<Fd> watch_inputs(std::initializer_list<int> fds);

}  // namespace cephscope
