#include "collectors/ring_reader.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace cephscope {

std::unique_ptr<RingReader> RingReader::start(int ringbuf_fd, const std::string& what,
                                              OnRecord on_record) {
  std::unique_ptr<RingReader> self(new RingReader(std::move(on_record)));
  auto on_data = [](void* ctx, void* data, std::size_t size) {
    static_cast<RingReader*>(ctx)->on_record_(data, size);
    return 0;
  };
  self->buffer_.reset(ring_buffer__new(ringbuf_fd, on_data, self.get(), nullptr));
  if (!self->buffer_) {
    spdlog::warn("{}: slow-op records off: ring buffer: {}", what, std::strerror(errno));
    return nullptr;
  }
  RingReader* raw = self.get();
  self->reader_ = std::jthread([raw, what](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      if (const int n = ring_buffer__poll(raw->buffer_.get(), 200); n < 0 && n != -EINTR) {
        spdlog::warn("{}: slow-op records stopped: {}", what, std::strerror(-n));
        return;
      }
    }
  });
  return self;
}

RingReader::~RingReader() {
  if (reader_.joinable()) {
    reader_.request_stop();
    reader_.join();
  }
}

}  // namespace cephscope
