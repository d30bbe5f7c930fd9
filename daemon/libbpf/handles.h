// RAII for libbpf's kernel objects. Links are destroyed before the object that owns their
// programs: declare a collector's links after its skeleton so they go first.
#pragma once

#include <bpf/libbpf.h>

#include <memory>
#include <utility>

namespace cephscope {

template <auto Destroy>
struct FnDeleter {
  template <typename T>
  void operator()(T* p) const {
    if (p != nullptr) {
      Destroy(p);
    }
  }
};

// A generated skeleton: Skeleton<syscall_bpf, syscall_bpf__destroy>.
template <typename Skel, void (*Destroy)(Skel*)>
using Skeleton = std::unique_ptr<Skel, FnDeleter<Destroy>>;

// One attached program; detaching happens in the destructor.
class Link {
 public:
  Link() = default;
  explicit Link(bpf_link* link) : link_(link) {}
  [[nodiscard]] bool attached() const { return link_ != nullptr; }

 private:
  std::unique_ptr<bpf_link, FnDeleter<bpf_link__destroy>> link_;
};

}  // namespace cephscope
