#include "profile/resolver_process.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "core/unique_fd.h"
#include "profile/profile_json.h"

#ifndef CEPHSCOPE_RESOLVER_INSTALLED
#define CEPHSCOPE_RESOLVER_INSTALLED "/usr/libexec/cephscope/cephscope-resolver"
#endif
#ifndef CEPHSCOPE_RESOLVER_FROM_SBIN
#define CEPHSCOPE_RESOLVER_FROM_SBIN "../libexec/cephscope/cephscope-resolver"
#endif

extern char** environ;  // NOLINT(readability-redundant-declaration): not in unistd.h for C++

namespace cephscope::profile {
namespace {

constexpr int kTargetRootFd = 3;            // where the child finds the target's root
constexpr std::size_t kMaxLogBytes = 8192;  // the tail of its stderr that is kept
constexpr auto kPollSlice = std::chrono::milliseconds(100);

Error sys_error(const std::string& what) {
  const int err = errno;
  return errno_error(what, err);
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> make_pipe() {
  std::array<int, 2> fds{};
  if (pipe2(fds.data(), O_CLOEXEC) != 0) {
    return sys_error("pipe2");
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Everything the child needs, prepared before fork(): after it only async-signal-safe calls.
struct ChildPlan {
  std::vector<std::string> args;
  std::vector<char*> argv;
  rlimit address_space{};
  pid_t parent = 0;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int root_fd = -1;  // -1: no target root
};

// In the child: drop every capability (bounding and ambient sets too, so the exec cannot
// regain them), limit memory, keep only fds 0-3, die with the daemon, exec the resolver.
[[noreturn]] void exec_child(const ChildPlan& plan) {
  auto die = [&](const char* what) {
    const int err = errno;
    (void)!write(STDERR_FILENO, what, std::strlen(what));
    (void)!write(STDERR_FILENO, ": ", 2);
    const char* why = strerrordesc_np(err);
    (void)!write(STDERR_FILENO, why, std::strlen(why));
    _exit(127);
  };
  if (dup2(plan.stdin_fd, STDIN_FILENO) < 0 || dup2(plan.stdout_fd, STDOUT_FILENO) < 0 ||
      dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
    _exit(127);
  }
  if (plan.root_fd == kTargetRootFd) {
    if (fcntl(kTargetRootFd, F_SETFD, 0) != 0) {  // dup2 onto itself keeps FD_CLOEXEC
      die("fcntl");
    }
  } else if (plan.root_fd >= 0 && dup2(plan.root_fd, kTargetRootFd) < 0) {
    die("dup2");
  } else if (plan.root_fd < 0 && close(kTargetRootFd) != 0 && errno != EBADF) {
    die("close");
  }
  sigset_t unblocked;
  sigemptyset(&unblocked);
  if (sigprocmask(SIG_SETMASK, &unblocked, nullptr) != 0) {  // the daemon blocks SIGTERM and more
    die("sigprocmask");
  }
  if (syscall(SYS_close_range, kTargetRootFd + 1, ~0U, 0) != 0) {
    die("close_range");
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    die("PR_SET_PDEATHSIG");
  }
  if (getppid() != plan.parent) {  // the daemon died before the line above
    _exit(127);
  }
  if (setrlimit(RLIMIT_AS, &plan.address_space) != 0) {
    die("RLIMIT_AS");
  }
  const rlimit no_core{0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) {
    die("RLIMIT_CORE");
  }
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) {
      die("PR_CAPBSET_DROP");
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    die("PR_CAP_AMBIENT");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> none{};
  if (syscall(SYS_capset, &header, none.data()) != 0) {
    die("capset");
  }
  // No exec may grant privileges again (a root uid would otherwise regain every capability).
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    die("PR_SET_NO_NEW_PRIVS");
  }
  execve(plan.argv[0], plan.argv.data(), environ);
  die("exec");
  _exit(127);  // unreachable: die() exits
}

// Reads what is ready on FD into OUT (up to MAX bytes kept: the head for stdout, the tail
// for stderr). False at end of file.
Result<bool> drain(int fd, std::string& out, std::size_t max, bool keep_tail, bool& overflow) {
  std::array<char, 65536> buf{};
  const ssize_t n = read(fd, buf.data(), buf.size());
  if (n < 0) {
    return errno == EINTR || errno == EAGAIN ? Result<bool>(true) : sys_error("read");
  }
  if (n == 0) {
    return false;
  }
  out.append(buf.data(), static_cast<std::size_t>(n));
  if (out.size() > max) {
    if (keep_tail) {
      out.erase(0, out.size() - max);
    } else {
      overflow = true;
    }
  }
  return true;
}

// The resolver's last non-empty stderr line: its own reason for failing.
std::string last_line(std::string_view log) {
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) {
    log.remove_suffix(1);
  }
  const auto nl = log.rfind('\n');
  return std::string(nl == std::string_view::npos ? log : log.substr(nl + 1));
}

// "debuginfo-source NAME" on a line of its own in the resolver's log.
std::string debug_source_in(std::string_view log) {
  constexpr std::string_view kKey = "debuginfo-source ";
  const auto at = log.find(kKey);
  if (at == std::string_view::npos) {
    return "";
  }
  const auto rest = log.substr(at + kKey.size());
  return std::string(rest.substr(0, rest.find('\n')));
}

// Writes SPEC to a child that may already have exited: EPIPE, never a SIGPIPE that would end
// the caller (SIGPIPE is blocked in this thread for the write, and a pending one taken).
Status send_spec(int fd, const std::string& spec) {
  sigset_t pipe_only;
  sigset_t old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  if (int err = pthread_sigmask(SIG_BLOCK, &pipe_only, &old); err != 0) {
    return errno_error("pthread_sigmask", err);
  }
  Status sent = ok_status();
  std::size_t done = 0;
  while (done < spec.size()) {
    const ssize_t n = write(fd, spec.data() + done, spec.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      sent = n < 0 ? sys_error("write") : make_error(ErrorKind::kSystem, "write: no progress");
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (!sent.ok() && sent.error().code == EPIPE && sigismember(&old, SIGPIPE) == 0) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  if (int err = pthread_sigmask(SIG_SETMASK, &old, nullptr); err != 0) {
    return errno_error("pthread_sigmask", err);
  }
  return sent;
}

ChildPlan plan_child(const ResolveRequest& req, const ResolverLimits& limits) {
  ChildPlan plan;
  plan.args = {limits.executable.empty() ? resolver_executable() : limits.executable, "--binary",
               req.binary};
  if (!req.target_root.empty()) {
    plan.args.insert(plan.args.end(),
                     {"--target-root", "/proc/self/fd/" + std::to_string(kTargetRootFd)});
  }
  if (!req.debug_file.empty()) {
    plan.args.insert(plan.args.end(), {"--debug-file", req.debug_file});
  }
  if (req.host_root != "/") {
    plan.args.insert(plan.args.end(), {"--host-root", req.host_root});
  }
  if (req.debug_dir != "/usr/lib/debug") {
    plan.args.insert(plan.args.end(), {"--debug-dir", req.debug_dir});
  }
  if (!req.debuginfod) {
    plan.args.emplace_back("--no-debuginfod");
  }
  if (!req.object.empty()) {
    plan.args.insert(plan.args.end(), {"--object", req.object});
  }
  if (!req.inlined) {
    plan.args.emplace_back("--no-inlined");
  }
  for (auto& a : plan.args) {
    plan.argv.push_back(a.data());
  }
  plan.argv.push_back(nullptr);
  plan.address_space = {limits.address_space_bytes, limits.address_space_bytes};
  plan.parent = getpid();
  return plan;
}

std::string describe_exit(int status, const std::string& log) {
  if (WIFSIGNALED(status)) {
    const std::string tail = last_line(log);
    return "resolver killed by signal " + std::to_string(WTERMSIG(status)) +
           (tail.empty() ? "" : " (" + tail + ")");
  }
  return "resolver failed (exit " + std::to_string(WEXITSTATUS(status)) + "): " + last_line(log);
}

}  // namespace

std::string resolver_executable() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // The build tree keeps it beside the daemon; an installed tree where the daemon's
    // folder and libexec stand as they did at configure time, under any prefix.
    for (const auto& candidate : {self.parent_path() / "cephscope-resolver",
                                  (self.parent_path() / CEPHSCOPE_RESOLVER_FROM_SBIN)}) {
      if (access(candidate.c_str(), X_OK) == 0) {
        return candidate.lexically_normal().string();
      }
    }
  }
  return CEPHSCOPE_RESOLVER_INSTALLED;
}

Result<ResolveOutcome> run_resolver(const ResolveRequest& request, const ResolverLimits& limits,
                                    const std::stop_token& stop) {
  const auto t0 = std::chrono::steady_clock::now();
  auto in = make_pipe();
  auto out = make_pipe();
  auto err = make_pipe();
  if (!in.ok() || !out.ok() || !err.ok()) {
    return (!in.ok() ? in : !out.ok() ? out : err).error();
  }
  UniqueFd root;
  if (!request.target_root.empty()) {
    root.reset(open(request.target_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) {
      return sys_error("open " + request.target_root);
    }
  }
  ChildPlan plan = plan_child(request, limits);
  plan.stdin_fd = in->read.get();
  plan.stdout_fd = out->write.get();
  plan.stderr_fd = err->write.get();
  plan.root_fd = root.get();
  const pid_t pid = fork();
  if (pid < 0) {
    return sys_error("fork");
  }
  if (pid == 0) {
    exec_child(plan);
  }
  in->read.reset();
  out->write.reset();
  err->write.reset();
  root.reset();

  // The spec goes in whole (a few KiB: the pipe holds it), then EOF.
  const Status sent = send_spec(in->write.get(), probe_set_to_json(request.set));
  in->write.reset();

  std::string json;
  std::string log;
  bool overflow = false;
  bool out_open = true;
  bool err_open = true;
  std::string killed_for;
  const auto deadline = t0 + limits.timeout;
  while (out_open || err_open) {
    if (stop.stop_requested()) {
      killed_for = "resolver stopped: the daemon is shutting down";
    } else if (std::chrono::steady_clock::now() >= deadline) {
      killed_for =
          "resolver timed out after " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limits.timeout).count()) +
          " s";
    } else if (overflow) {
      killed_for = "resolver output over " + std::to_string(limits.max_output_bytes) + " bytes";
    }
    if (!killed_for.empty()) {
      break;
    }
    std::array<pollfd, 2> fds{{{out_open ? out->read.get() : -1, POLLIN, 0},
                               {err_open ? err->read.get() : -1, POLLIN, 0}}};
    const int n = poll(fds.data(), fds.size(), static_cast<int>(kPollSlice.count()));
    if (n < 0 && errno != EINTR) {
      killed_for = "poll: " + std::string(std::strerror(errno));
      break;
    }
    bool unused = false;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      auto more = drain(out->read.get(), json, limits.max_output_bytes, false, overflow);
      if (!more.ok()) {
        killed_for = "resolver output: " + more.error().message;
        break;
      }
      out_open = *more;
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      auto more = drain(err->read.get(), log, kMaxLogBytes, true, unused);
      if (!more.ok()) {
        killed_for = "resolver log: " + more.error().message;
        break;
      }
      err_open = *more;
    }
  }
  // The child is not reaped yet, so it exists and the kill cannot miss.
  if (!killed_for.empty() && kill(pid, SIGKILL) != 0) {
    killed_for += " (kill: " + std::string(std::strerror(errno)) + ")";
  }
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      return sys_error("wait4");
    }
  }
  if (!killed_for.empty()) {
    return make_error(ErrorKind::kSystem, killed_for);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return make_error(ErrorKind::kSystem, describe_exit(status, log));
  }
  if (!sent.ok()) {
    return make_error(ErrorKind::kSystem, "resolver did not take the probe set", sent.error().code);
  }
  auto profile = parse_profile(json);
  if (!profile.ok()) {
    return make_error(profile.error().kind, "resolver output: " + profile.error().message);
  }
  // Paths the child saw through fd 3 are the target's root as the daemon names it.
  const std::string child_root = "/proc/self/fd/" + std::to_string(kTargetRootFd);
  for (std::string* path : {&profile->debug_file, &profile->binary_path}) {
    if (!request.target_root.empty() && path->starts_with(child_root + "/")) {
      path->replace(0, child_root.size(), request.target_root);
    }
  }
  ResolveOutcome outcome{std::move(profile).value(), debug_source_in(log), log, 0,
                         static_cast<std::uint64_t>(usage.ru_maxrss)};
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return outcome;
}

}  // namespace cephscope::profile
