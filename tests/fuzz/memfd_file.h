// The fuzz input as a file: the readers under test open paths, so each input is written to
// one memfd, reached as /proc/self/fd/N.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace cephscope::fuzz {

class MemfdFile {
 public:
  MemfdFile() : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemfdFile(const MemfdFile&) = delete;
  MemfdFile& operator=(const MemfdFile&) = delete;
  ~MemfdFile() { ::close(fd_); }

  // Replaces the content with SIZE bytes of DATA.
  void assign(const uint8_t* data, size_t size) const {
    if (::ftruncate(fd_, 0) != 0) {
      std::abort();
    }
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) {
        std::abort();
      }
      done += static_cast<size_t>(n);
    }
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace cephscope::fuzz
