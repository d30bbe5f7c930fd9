// The daemon as a service sees it: systemd's notification protocol against a real datagram
// socket, log lines that logfmt and JSON readers parse whatever bytes a message holds, and
// the flags and --version as Prometheus exporters spell them.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include <spdlog/details/log_msg.h>

#include "app/log_format.h"
#include "app/service_notify.h"
#include "core/build_info.h"
#include "core/unique_fd.h"
#include "support/daemon_runner.h"
#include "support/subprocess.h"

using namespace cephscope;
using namespace cephscope::test;

namespace {

// A bound datagram socket like systemd's notify socket; receive() returns "" on timeout.
struct NotifySocket {
  std::string path;
  UniqueFd fd{::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  explicit NotifySocket(std::string p) : path(std::move(p)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    timeval tv{0, 200000};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  [[nodiscard]] std::string receive() const {
    char buf[512];
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }
};

std::string format_line(LogFormat format, const std::string& text) {
  spdlog::details::log_msg msg("cephscope", spdlog::level::warn, text);
  spdlog::memory_buf_t out;
  make_log_formatter(format)->format(msg, out);
  return {out.data(), out.size()};
}

}  // namespace

TEST_CASE("the notifier speaks systemd's protocol and leaves children nothing", "[service]") {
  const std::string dir = test_dir("/tmp");
  const NotifySocket socket(dir + "/notify");
  ::setenv("NOTIFY_SOCKET", socket.path.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  auto notifier = ServiceNotifier::from_environment();
  REQUIRE(notifier.ok());
  CHECK(std::getenv("NOTIFY_SOCKET") == nullptr);  // the resolver must not notify for us
  CHECK(std::getenv("WATCHDOG_USEC") == nullptr);
  CHECK(notifier->watchdog_interval() == std::chrono::seconds(2));

  notifier->ready("3 processes tracked");
  CHECK(socket.receive() == "READY=1\nSTATUS=3 processes tracked");
  notifier->status("3 processes tracked");  // unchanged: not sent again
  notifier->status("4 processes tracked");
  CHECK(socket.receive() == "STATUS=4 processes tracked");
  const auto t0 = ServiceNotifier::Clock::now();
  notifier->watchdog(t0);
  CHECK(socket.receive() == "WATCHDOG=1");
  notifier->watchdog(t0 + std::chrono::milliseconds(900));  // before half the interval
  notifier->watchdog(t0 + std::chrono::milliseconds(1000));
  CHECK(socket.receive() == "WATCHDOG=1");
  CHECK(socket.receive().empty());
  notifier->reloading();
  CHECK(socket.receive().starts_with("RELOADING=1\nMONOTONIC_USEC="));

  // Another process' watchdog, or none at all: no pings.
  ::setenv("NOTIFY_SOCKET", socket.path.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  ::setenv("WATCHDOG_PID", "1", 1);
  auto other = ServiceNotifier::from_environment();
  REQUIRE(other.ok());
  CHECK(other->watchdog_interval().count() == 0);

  ::setenv("NOTIFY_SOCKET", "relative/path", 1);
  CHECK(!ServiceNotifier::from_environment().ok());
  ::setenv("NOTIFY_SOCKET", socket.path.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "soon", 1);
  CHECK(!ServiceNotifier::from_environment().ok());
  auto none = ServiceNotifier::from_environment();  // both variables were taken
  REQUIRE(none.ok());
  CHECK(!none->active());
  none->ready("nobody listens");  // does nothing, and does not fail
  std::filesystem::remove_all(dir);
}

TEST_CASE("log lines stay parseable whatever bytes a message holds", "[service]") {
  const std::string hostile = std::string("osd \"x\" \\ tab\there\nnew line \x01 bad \xff\xfe end");
  const auto json = nlohmann::json::parse(format_line(LogFormat::kJson, hostile));
  CHECK(json.at("level") == "warn");
  CHECK(json.at("msg") == "osd \"x\" \\ tab\there\nnew line \x01 bad \xEF\xBF\xBD\xEF\xBF\xBD end");
  CHECK(json.at("ts").get<std::string>().ends_with("Z"));

  const std::string logfmt = format_line(LogFormat::kLogfmt, hostile);
  CHECK(logfmt.starts_with("ts="));
  CHECK(logfmt.find(" level=warn msg=\"osd \\\"x\\\" \\\\ tab\\there\\nnew line \\u0001 bad "
                    "\xEF\xBF\xBD\xEF\xBF\xBD end\"\n") != std::string::npos);
  CHECK(logfmt.find('\n') == logfmt.size() - 1);  // one line, always
  CHECK(parse_log_format("logfmt") == LogFormat::kLogfmt);
  CHECK(!parse_log_format("text").has_value());
}

TEST_CASE("flags as exporters spell them, and --version names the revision", "[service][cli]") {
  std::string out;
  REQUIRE(run_command(daemon_binary() + " --version", &out) == 0);
  CHECK(out.starts_with(std::string("cephscope, version ") + build_info().version +
                        " (revision: " + build_info().revision + ")"));
  CHECK(out.find("libbpf: ") != std::string::npos);
  CHECK(std::string(build_info().revision) != "unknown");  // built from the git checkout

  const std::string dir = test_dir("/tmp");
  const std::string config = dir + "/bad.yaml";
  std::ofstream(config) << "listen: nowhere:port\n";
  CHECK(run_command(daemon_binary() + " --config.check --config.file " + config, &out) == 2);
  CHECK(out.find("listen") != std::string::npos);
  CHECK(run_command(daemon_binary() + " --log.format text --config.check", &out) != 0);
  CHECK(out.find("--log.format") != std::string::npos);
  std::filesystem::remove_all(dir);
}
