#include "kernel/vfs_hook_probe.h"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "libbpf/handles.h"
#include "vfs_hook_probe.skel.h"

namespace cephscope::test {
namespace {

constexpr unsigned long long kCalls = 4;          // of each syscall
enum Call { kRead, kWrite, kFsync, kCallKinds };  // CALL_* of vfs_hook_probe.bpf.c

using ProbeSkel = Skeleton<vfs_hook_probe_bpf, vfs_hook_probe_bpf__destroy>;

// libbpf's first complaint, kept for the reason a flavour does not work.
std::string g_libbpf_said;

int keep_first(enum libbpf_print_level level, const char* format, va_list args) {
  if (level != LIBBPF_DEBUG && g_libbpf_said.empty()) {
    std::array<char, 512> line{};
    std::vsnprintf(line.data(), line.size(), format, args);
    g_libbpf_said = line.data();
    if (g_libbpf_said.starts_with("libbpf: ")) {
      g_libbpf_said.erase(0, 8);
    }
    while (!g_libbpf_said.empty() && g_libbpf_said.back() == '\n') {
      g_libbpf_said.pop_back();
    }
  }
  return 0;
}

// While it lives, libbpf's first complaint goes to g_libbpf_said in place of stderr.
class KeepFirstComplaint {
 public:
  KeepFirstComplaint() : previous_(libbpf_set_print(keep_first)) { g_libbpf_said.clear(); }
  ~KeepFirstComplaint() { libbpf_set_print(previous_); }
  KeepFirstComplaint(const KeepFirstComplaint&) = delete;
  KeepFirstComplaint& operator=(const KeepFirstComplaint&) = delete;

 private:
  libbpf_print_fn_t previous_;
};

std::string failed(const std::string& step, int err) {
  std::string why = step + ": " + std::strerror(err);
  if (!g_libbpf_said.empty()) {
    why += " (libbpf: " + g_libbpf_said + ")";
  }
  return why;
}

// kCalls pwrite(2), fdatasync(2) and read(2) on a file of its own; false when one fails.
bool fire(const std::string& dir) {
  const std::string path = dir + "/vfs-hook-probe.dat";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return false;
  }
  std::array<char, 512> buf{};
  const auto size = static_cast<ssize_t>(buf.size());
  bool ok = true;
  for (unsigned long long i = 0; i < kCalls && ok; ++i) {
    ok = pwrite(fd, buf.data(), buf.size(), 0) == size && fdatasync(fd) == 0 &&
         lseek(fd, 0, SEEK_SET) == 0 && read(fd, buf.data(), buf.size()) == size;
  }
  close(fd);
  unlink(path.c_str());
  return ok;
}

}  // namespace

VfsHookProbe probe_vfs_hook(const std::string& hook, const std::string& dir) {
  VfsHookProbe out;
  out.hook = hook;
  const KeepFirstComplaint quiet;
  ProbeSkel skel(vfs_hook_probe_bpf__open());
  if (!skel) {
    out.reason = failed("open", errno);
    return out;
  }
  skel->rodata->target_tgid = static_cast<__u32>(getpid());
  const std::string prefix = hook + "_";
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel->obj) {
    bpf_program__set_autoload(prog, std::string(bpf_program__name(prog)).starts_with(prefix));
  }
  if (const int err = vfs_hook_probe_bpf__load(skel.get()); err != 0) {
    out.reason = failed("load", -err);
    return out;
  }
  std::vector<Link> links;  // declared after skel: detached first
  bpf_object__for_each_program(prog, skel->obj) {
    if (!bpf_program__autoload(prog)) {
      continue;
    }
    bpf_link* link = bpf_program__attach(prog);
    if (link == nullptr) {
      const int err = errno;
      out.reason = failed(std::string("attach ") + bpf_program__name(prog), err);
      return out;
    }
    links.emplace_back(link);
  }
  for (auto& n : skel->bss->calls) {
    __atomic_store_n(&n, 0, __ATOMIC_RELAXED);  // attaching may have read files of its own
  }
  if (!fire(dir)) {
    out.reason = failed("IO in " + dir, errno);
    return out;
  }
  std::array<unsigned long long, kCallKinds> n{};
  for (int i = 0; i < kCallKinds; ++i) {
    n.at(i) = __atomic_load_n(&skel->bss->calls[i], __ATOMIC_RELAXED);
  }
  const std::string of = " of " + std::to_string(kCalls);
  if (n[kRead] != kCalls || n[kWrite] != kCalls) {
    out.reason = "attached, but saw " + std::to_string(n[kRead]) + of + " read(2) and " +
                 std::to_string(n[kWrite]) + of + " pwrite(2) in vfs_read and vfs_write";
    return out;
  }
  if (n[kFsync] != 0 && n[kFsync] != kCalls) {
    out.reason =
        "attached, but saw " + std::to_string(n[kFsync]) + of + " fdatasync(2) in vfs_fsync_range";
    return out;
  }
  out.fdatasync_seen = n[kFsync] == kCalls;
  out.works = true;
  return out;
}

std::vector<VfsHookProbe> probe_vfs_hooks(const std::string& dir) {
  return {probe_vfs_hook("fentry", dir), probe_vfs_hook("kprobe", dir)};
}

struct FullTrampoline::Held {
  std::vector<ProbeSkel> skels;
  std::vector<Link> links;  // declared after skels: detached first
};

FullTrampoline::FullTrampoline(const std::string& function) : held_(std::make_unique<Held>()) {
  const KeepFirstComplaint quiet;
  // Every kernel's limit is a few dozen (BPF_MAX_TRAMP_LINKS); more means something is wrong.
  constexpr unsigned kMost = 256;
  while (programs_ < kMost) {
    ProbeSkel skel(vfs_hook_probe_bpf__open());
    if (!skel) {
      reason_ = failed("open", errno);
      return;
    }
    // One program per load: the kernel links a program to a function once.
    bpf_program* prog = nullptr;
    bpf_object__for_each_program(prog, skel->obj) {
      bpf_program__set_autoload(prog, prog == skel->progs.fentry_vfs_read);
    }
    if (const int err =
            bpf_program__set_attach_target(skel->progs.fentry_vfs_read, 0, function.c_str());
        err != 0) {
      reason_ = failed("attach target " + function, -err);
      return;
    }
    if (const int err = vfs_hook_probe_bpf__load(skel.get()); err != 0) {
      reason_ = failed("load", -err);
      return;
    }
    bpf_link* link = bpf_program__attach(skel->progs.fentry_vfs_read);
    if (link == nullptr) {
      const int err = errno;
      full_ = err == E2BIG && programs_ > 0;
      reason_ = full_ ? "" : failed("attach to " + function, err);
      return;
    }
    held_->skels.push_back(std::move(skel));
    held_->links.emplace_back(link);
    ++programs_;
  }
  reason_ = function + " took " + std::to_string(kMost) + " fentry programs";
}

FullTrampoline::~FullTrampoline() = default;

}  // namespace cephscope::test
