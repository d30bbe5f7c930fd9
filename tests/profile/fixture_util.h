// Helpers shared by the profile tests: running the fixture, temporary directories.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace cephscope::profile::test {

// Runs CMD through the shell; returns its stdout. STATUS gets the exit status.
std::string run(const std::string& cmd, int* status = nullptr);

// What the fixture binary at PATH says about its own layouts and addresses.
nlohmann::json oracle(const std::string& fixture);

// A fresh directory under /tmp, removed with everything in it.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string operator/(const std::string& name) const {
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

// Writes TEXT to PATH.
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

}  // namespace cephscope::profile::test
