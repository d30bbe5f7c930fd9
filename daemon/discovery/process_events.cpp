#include "discovery/process_events.h"

#include <cerrno>
#include <cstring>

#include "bpf/discovery.h"
#include "discovery.skel.h"
#include "libbpf/maps.h"

namespace cephscope {

Result<std::unique_ptr<ProcessEvents>> ProcessEvents::start() {
  std::unique_ptr<ProcessEvents> self(new ProcessEvents());
  self->skel_ = discovery_bpf__open_and_load();
  if (self->skel_ == nullptr) {
    const int err = errno;
    return errno_error("cannot load the discovery BPF object", err);
  }
  for (bpf_program* prog : {self->skel_->progs.on_exec, self->skel_->progs.on_exit}) {
    bpf_link* link = bpf_program__attach(prog);
    if (link == nullptr) {
      const int err = errno;
      return errno_error(std::string("cannot attach ") + bpf_program__name(prog), err);
    }
    self->links_.emplace_back(link);
  }
  self->ring_ = ring_buffer__new(bpf_map__fd(self->skel_->maps.process_events), on_event,
                                 self.get(), nullptr);
  if (self->ring_ == nullptr) {
    const int err = errno;
    return errno_error("cannot open the event ring buffer", err);
  }
  return self;
}

ProcessEvents::~ProcessEvents() {
  if (ring_ != nullptr) {
    ring_buffer__free(ring_);
  }
  links_.clear();  // detach before the object goes
  if (skel_ != nullptr) {
    discovery_bpf__destroy(skel_);
  }
}

int ProcessEvents::on_event(void* ctx, void* data, std::size_t size) {
  auto* self = static_cast<ProcessEvents*>(ctx);
  if (size < sizeof(process_event)) {
    return 0;
  }
  const auto* e = static_cast<const process_event*>(data);
  if (self->handler_ != nullptr) {
    (*self->handler_)(static_cast<pid_t>(e->tgid), e->type == PROCESS_EXEC);
  }
  return 0;
}

TrackedMaps ProcessEvents::tracked_maps() const {
  return {bpf_map__fd(skel_->maps.tracked_tgids), bpf_map__fd(skel_->maps.tracked_slots)};
}
int ProcessEvents::tracked_map_capacity() const {
  return static_cast<int>(bpf_map__max_entries(skel_->maps.tracked_tgids));
}
int ProcessEvents::poll_fd() const {
  return ring_buffer__epoll_fd(ring_);
}
Status ProcessEvents::consume(const Handler& handler) {
  handler_ = &handler;
  const int n = ring_buffer__consume(ring_);
  handler_ = nullptr;
  if (n < 0) {
    return errno_error("cannot read the process event ring buffer", -n);
  }
  return ok_status();
}
Result<std::uint64_t> ProcessEvents::lost() const {
  return sum_percpu_u64(bpf_map__fd(skel_->maps.lost_events), LOST_INFLIGHT_FULL);
}

}  // namespace cephscope
