// Child processes and plain HTTP for tests: what a user would do with a shell and curl.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cephscope::test {

class Subprocess {
 public:
  // Starts argv[0] with argv; stdout and stderr go to log_path when given.
  explicit Subprocess(const std::vector<std::string>& argv, const std::string& log_path = "");
  ~Subprocess();  // kills and reaps a child still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Exit status (or 128 + signal), nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// GET http://127.0.0.1:port/path; nullopt when the connection fails. Sets *status.
std::optional<std::string> http_get(int port, const std::string& path, int* status = nullptr);

// A TCP port on 127.0.0.1 free right now.
int free_port();

// Asks PRED every 100 ms until it holds or TIMEOUT has passed; its last answer.
bool eventually(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Runs a shell command, returning its exit status and output.
int run_command(const std::string& command, std::string* output = nullptr);

}  // namespace cephscope::test
