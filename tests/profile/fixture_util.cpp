#include "fixture_util.h"

#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

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

ReadyProcess::ReadyProcess(const std::vector<std::string>& argv) {
  int in[2];
  int out[2];
  if (argv.empty() || ::pipe(in) != 0 || ::pipe(out) != 0) {
    throw std::runtime_error("ReadyProcess: no command or no pipe");
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) {
    throw std::runtime_error("ReadyProcess: fork failed");
  }
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[1]);
    ::close(out[0]);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  stdin_ = in[1];
  char buf[8] = {};
  const ssize_t n = ::read(out[0], buf, 6);  // "ready\n": the binary is mapped
  ::close(out[0]);
  if (n != 6 || std::string(buf) != "ready\n") {
    ::close(stdin_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    throw std::runtime_error("ReadyProcess: " + argv[0] + " did not print ready");
  }
}

ReadyProcess::~ReadyProcess() {
  ::close(stdin_);
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

uint64_t file_offset_of(const std::string& path, uint64_t vaddr) {
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  size_t n = 0;
  elf_getphdrnum(e, &n);
  uint64_t out = ~uint64_t{0};
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    gelf_getphdr(e, static_cast<int>(i), &ph);
    if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
      out = vaddr - ph.p_vaddr + ph.p_offset;
    }
  }
  elf_end(e);
  ::close(fd);
  return out;
}

}  // namespace cephscope::profile::test
