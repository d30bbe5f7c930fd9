// The fds the daemon loop waits on: a signalfd for SIGTERM, SIGINT and SIGHUP (read in the
// loop, never in async handlers) and an epoll set. Every call is checked: a daemon that
// cannot see its signals must not start.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "core/result.h"
#include "core/unique_fd.h"

namespace cephscope {

// Blocks SIGTERM, SIGINT and SIGHUP in this thread and the threads it starts later, and
// returns a non-blocking signalfd that receives them.
Result<UniqueFd> open_signal_fd();

// The number of the next pending signal; nothing once none is left.
Result<std::optional<std::uint32_t>> next_signal(const UniqueFd& signal_fd);

// An epoll fd that reports input on each of `fds` (its data.fd is that fd).
Result<UniqueFd> watch_inputs(std::initializer_list<int> fds);

}  // namespace cephscope
