#include "fixture_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cephscope::profile::test {

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    throw std::runtime_error("popen " + cmd);
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) {
    out.append(buf, n);
  }
  const int st = ::pclose(p);
  if (status != nullptr) {
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  return out;
}

nlohmann::json oracle(const std::string& fixture) {
  int status = 0;
  const std::string text = run(fixture + " oracle", &status);
  if (status != 0) {
    throw std::runtime_error(fixture + " oracle failed");
  }
  return nlohmann::json::parse(text);
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "cephscope-profile-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("mkdtemp");
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace cephscope::profile::test
