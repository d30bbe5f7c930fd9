#include "app/event_fds.h"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

namespace cephscope {
namespace {

// errno read before CALL's text is made, which may allocate.
Error last_error(const std::string& call) {
  const int err = errno;
  return errno_error(call, err);
}

}  // namespace

Result<UniqueFd> open_signal_fd() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&mask, s);
  }
  // Returns the error number itself, not -1 and errno.
  if (const int err = pthread_sigmask(SIG_BLOCK, &mask, nullptr); err != 0) {
    return errno_error("pthread_sigmask", err);
  }
  UniqueFd fd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (fd.get() < 0) {
    return last_error("signalfd");
  }
  return fd;
}

Result<std::optional<std::uint32_t>> next_signal(const UniqueFd& signal_fd) {
  signalfd_siginfo si{};
  for (;;) {
    const ssize_t got = read(signal_fd.get(), &si, sizeof(si));
    if (got == static_cast<ssize_t>(sizeof(si))) {
      return std::optional<std::uint32_t>(si.ssi_signo);
    }
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0 && errno == EAGAIN) {
      return std::optional<std::uint32_t>();
    }
    if (got < 0) {
      return last_error("read from the signalfd");
    }
    return make_error(ErrorKind::kSystem,
                      "read from the signalfd: " + std::to_string(got) + " bytes, not a siginfo");
  }
}

Result<UniqueFd> watch_inputs(std::initializer_list<int> fds) {
  UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  if (epoll.get() < 0) {
    return last_error("epoll_create1");
  }
  for (int fd : fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return last_error("epoll_ctl(ADD, fd " + std::to_string(fd) + ")");
    }
  }
  return epoll;
}

}  // namespace cephscope
