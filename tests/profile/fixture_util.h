// Helpers shared by the profile tests: running the fixture, temporary directories.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/temp_dir.h"

namespace cephscope::profile::test {

// Runs CMD through the shell; returns its stdout. STATUS gets the exit status.
std::string run(const std::string& cmd, int* status = nullptr);

// What the fixture binary at PATH says about its own layouts and addresses.
nlohmann::json oracle(const std::string& fixture);

// A fresh directory under /tmp, removed with everything in it.
using TempDir = cephscope::test::TempDir;

// VADDR's file offset in the ELF file at PATH, read with libelf directly (independent of
// ElfFile); ~0 when no PT_LOAD maps it.
uint64_t file_offset_of(const std::string& path, uint64_t vaddr);

// A process started from ARGV (execvp) that prints "ready\n" and then waits on its stdin, as
// the fixture's "wait" mode does; killed and reaped when destroyed.
class ReadyProcess {
 public:
  explicit ReadyProcess(const std::vector<std::string>& argv);
  ReadyProcess(const ReadyProcess&) = delete;
  ReadyProcess& operator=(const ReadyProcess&) = delete;
  ~ReadyProcess();
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
};

// Writes TEXT to PATH.
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

}  // namespace cephscope::profile::test
