// The discovery BPF object: owns the tracked-process maps every collector shares, and
// reports execs (for prompt pick-up) and exits of tracked processes through a ring buffer.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>

#include "core/result.h"
#include "discovery/tracked_maps.h"
#include "libbpf/handles.h"

struct discovery_bpf;

namespace cephscope {

class ProcessEvents {
 public:
  using Handler = std::function<void(pid_t pid, bool exec)>;

  static Result<std::unique_ptr<ProcessEvents>> start();
  ~ProcessEvents();
  ProcessEvents(const ProcessEvents&) = delete;
  ProcessEvents& operator=(const ProcessEvents&) = delete;

  [[nodiscard]] TrackedMaps tracked_maps() const;
  [[nodiscard]] int tracked_map_capacity() const;
  // An fd that becomes readable when events wait; then call consume().
  [[nodiscard]] int poll_fd() const;
  // Hands every waiting event to `handler`, which is held only during the call.
  Status consume(const Handler& handler);
  // Exec and exit events dropped because the ring buffer was full.
  [[nodiscard]] Result<std::uint64_t> lost() const;

 private:
  ProcessEvents() = default;
  static int on_event(void* ctx, void* data, std::size_t size);

  discovery_bpf* skel_ = nullptr;
  std::vector<Link> links_;
  ring_buffer* ring_ = nullptr;
  const Handler* handler_ = nullptr;  // during consume() only
};

}  // namespace cephscope
