// What the vfs collector must do on this kernel, found out without the daemon: the fentry or
// kprobe programs of vfs_hook_probe.bpf.c on vfs_read, vfs_write and vfs_fsync_range, loaded,
// attached and fired by this process's own read(2), pwrite(2) and fdatasync(2).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace cephscope::test {

struct VfsHookProbe {
  std::string hook;             // "fentry" or "kprobe"
  bool works = false;           // loaded, attached, and counted each read(2) and pwrite(2) once
  std::string reason;           // why not
  bool fdatasync_seen = false;  // fdatasync(2) calls vfs_fsync_range (some builds inline it)
};

// Probes one flavour with IO on a file in `dir`.
VfsHookProbe probe_vfs_hook(const std::string& hook, const std::string& dir);

// fentry, then kprobe: the order in which the vfs collector's `hook: auto` tries them.
std::vector<VfsHookProbe> probe_vfs_hooks(const std::string& dir);

// A kernel function's BPF trampoline filled with trivial fentry programs until the kernel
// refused one (its limit of programs per function, E2BIG): fentry and fexit attaches there
// fail while this lives. The programs detach in the destructor.
class FullTrampoline {
 public:
  explicit FullTrampoline(const std::string& function);
  ~FullTrampoline();
  FullTrampoline(const FullTrampoline&) = delete;
  FullTrampoline& operator=(const FullTrampoline&) = delete;
  [[nodiscard]] bool full() const { return full_; }
  [[nodiscard]] unsigned programs() const { return programs_; }  // attached before the refusal
  [[nodiscard]] const std::string& reason() const { return reason_; }  // why not full

 private:
  struct Held;
  std::unique_ptr<Held> held_;
  bool full_ = false;
  unsigned programs_ = 0;
  std::string reason_;
};

}  // namespace cephscope::test
