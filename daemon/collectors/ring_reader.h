// A thread that reads one BPF ring buffer (slow-op records: rare by design) and hands each
// record to a callback; stopped and joined before the ring buffer is freed.
#pragma once

#include <bpf/libbpf.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace cephscope {

class RingReader {
 public:
  using OnRecord = std::function<void(const void* data, std::size_t size)>;

  // Reads the ring buffer at RINGBUF_FD on a thread of its own; nullptr (and a warning naming
  // WHAT) when it cannot.
  static std::unique_ptr<RingReader> start(int ringbuf_fd, const std::string& what,
                                           OnRecord on_record);
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  RingReader(RingReader&&) = delete;
  RingReader& operator=(RingReader&&) = delete;

 private:
  explicit RingReader(OnRecord on_record) : on_record_(std::move(on_record)) {}

  OnRecord on_record_;
  std::unique_ptr<ring_buffer, decltype(&ring_buffer__free)> buffer_{nullptr, ring_buffer__free};
  std::jthread reader_;  // last: stops first
};

}  // namespace cephscope
