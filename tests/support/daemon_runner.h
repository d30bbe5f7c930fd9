// Runs the real cephscope binary with a test's config, as an operator would.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "support/metrics_text.h"
#include "support/subprocess.h"

namespace cephscope::test {

// The daemon binary: $CEPHSCOPE_BIN, else the one in the build tree.
std::string daemon_binary();

// A directory for test files: $CEPHSCOPE_TEST_DIR, else a fresh one under `fallback`.
std::string test_dir(const std::string& fallback);

class Daemon {
 public:
  // config_body: YAML without `listen`, which the runner sets to a free port on 127.0.0.1, or
  // to `listen` (HOST:PORT, e.g. 0.0.0.0:9488 for a scraper outside). `wrapper` runs the
  // daemon through another program (e.g. setpriv with a capability set).
  Daemon(const std::string& dir, const std::string& config_body,
         const std::vector<std::string>& wrapper = {}, const std::string& listen = "");
  ~Daemon();

  // Waits for /readyz; false on timeout or early exit (the log is in log_path()). A daemon that
  // starts returns at once; the 90 s are for an emulated guest on a loaded host, where loading
  // the programs took over 30 s in CI (6.1 guest, beside the Ceph tests).
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(90));
  std::string scrape_text();
  Metrics scrape() { return Metrics::parse(scrape_text()); }
  // SIGTERM and the exit status; nullopt when it did not stop in time.
  std::optional<int> stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // SIGKILL, as the OOM killer or an operator's kill -9 would; the exit status (128 + 9).
  std::optional<int> kill_hard(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  [[nodiscard]] pid_t pid() const { return process_->pid(); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] const std::string& log_path() const { return log_; }
  [[nodiscard]] const std::string& config_path() const { return config_; }
  [[nodiscard]] std::string log() const;
  // Polls the log until it holds `text`; false when it did not within `timeout`.
  [[nodiscard]] bool log_has(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  int port_;
  std::string config_;
  std::string log_;
  std::unique_ptr<Subprocess> process_;
};

// Prints the end of the daemon's log when an exception (a failed REQUIRE) ends the test: its
// files may be in a directory the test's teardown removes.
struct DaemonLogOnFailure {
  Daemon& daemon;
  DaemonLogOnFailure(const DaemonLogOnFailure&) = delete;
  DaemonLogOnFailure& operator=(const DaemonLogOnFailure&) = delete;
  explicit DaemonLogOnFailure(Daemon& d) : daemon(d) {}
  ~DaemonLogOnFailure();
};

}  // namespace cephscope::test
