#include "support/daemon_runner.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace cephscope::test {

std::string daemon_binary() {
  const char* env = std::getenv("CEPHSCOPE_BIN");
  return env != nullptr ? env : CEPHSCOPE_DEFAULT_BIN;
}

std::string test_dir(const std::string& fallback) {
  const char* env = std::getenv("CEPHSCOPE_TEST_DIR");
  std::string base = env != nullptr ? env : fallback;
  std::string templ = base + "/cephscope-test-XXXXXX";
  std::filesystem::create_directories(base);
  if (mkdtemp(templ.data()) == nullptr) {
    throw std::runtime_error("cannot create a test directory under " + base);
  }
  return templ;
}

Daemon::Daemon(const std::string& dir, const std::string& config_body,
               const std::vector<std::string>& wrapper, const std::string& listen)
    : port_(listen.empty() ? free_port() : std::stoi(listen.substr(listen.rfind(':') + 1))) {
  config_ = dir + "/cephscope.yaml";
  log_ = dir + "/cephscope.log";
  std::ofstream(config_) << "listen: \""
                         << (listen.empty() ? "127.0.0.1:" + std::to_string(port_) : listen)
                         << "\"\n"
                         << config_body;
  std::vector<std::string> argv = wrapper;
  argv.insert(argv.end(), {daemon_binary(), "--config", config_});
  process_ = std::make_unique<Subprocess>(argv, log_);
}

Daemon::~Daemon() {
  stop(std::chrono::seconds(5));
}

bool Daemon::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (http_get(port_, "/readyz", &status) && status == 200) {
      return true;
    }
    if (process_->wait(std::chrono::milliseconds(0))) {
      return false;  // exited
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string Daemon::scrape_text() {
  int status = 0;
  auto body = http_get(port_, "/metrics", &status);
  if (!body || status != 200) {
    throw std::runtime_error("scrape failed; daemon log:\n" + log());
  }
  return *body;
}

std::optional<int> Daemon::stop(std::chrono::milliseconds timeout) {
  process_->signal(SIGTERM);
  return process_->wait(timeout);
}

std::optional<int> Daemon::kill_hard(std::chrono::milliseconds timeout) {
  process_->signal(SIGKILL);
  return process_->wait(timeout);
}

std::string Daemon::log() const {
  std::ifstream in(log_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Daemon::log_has(const std::string& text, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (log().find(text) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

DaemonLogOnFailure::~DaemonLogOnFailure() {
  if (std::uncaught_exceptions() == 0) {
    return;
  }
  std::string text = daemon.log();
  if (text.size() > 6000) {
    text = "...\n" + text.substr(text.size() - 6000);
  }
  std::fprintf(stderr, "---- cephscope log (%s) ----\n%s\n", daemon.log_path().c_str(),
               text.c_str());
}

}  // namespace cephscope::test
