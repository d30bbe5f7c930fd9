// cephscope_vm_hookprobe: loads, attaches and fires each program of hookprobe.bpf.c on its
// own and prints one line per hook:
//   hook=<kind> target=<function|tracepoint> load=<ok|fail> attach=<ok|fail|-> hits=<n>
//   [error="..."]
// Exit status 0 when it ran (whatever the hooks did), 2 on a usage error. The block hooks
// need a file on a real block device: pass its folder (default $CEPHSCOPE_TEST_DIR).
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "vm_hookprobe.skel.h"

namespace {

struct Hook {
  const char* kind;
  const char* target;
  int hit_index;
  bool block_io;
  bpf_program* (*prog)(vm_hookprobe_bpf*);
};

std::string g_last_libbpf_error;

int on_libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG)
    return 0;
  char buf[512];
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  std::string line(buf);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  // keep the first message: it names the program and the errno, later ones only summarise
  if (!line.empty() && g_last_libbpf_error.empty())
    g_last_libbpf_error = line;
  return 0;
}

std::string quote(std::string s) {
  for (auto& c : s)
    if (c == '"')
      c = '\'';
  return "\"" + s + "\"";
}

// Reads a small file a few times with read(2), then (for the block hooks) writes and reads
// back with O_DIRECT so requests reach the block layer.
void trigger(const std::string& dir, bool block_io) {
  const std::string path = dir + "/cephscope-vm-hookprobe.dat";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return;
  char small[64] = "cephscope";
  if (write(fd, small, sizeof(small)) != static_cast<ssize_t>(sizeof(small))) {
    close(fd);
    return;
  }
  for (int i = 0; i < 8; i++)
    if (pread(fd, small, sizeof(small), 0) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
        read(fd, small, sizeof(small)) < 0)
      break;
  close(fd);
  if (!block_io)
    return;
  fd = open(path.c_str(), O_RDWR | O_DIRECT);
  if (fd < 0)
    return;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) == 0) {
    std::memset(buf, 0x5a, 4096);
    for (int i = 0; i < 4; i++) {
      if (pwrite(fd, buf, 4096, static_cast<off_t>(i) * 4096) < 0)
        break;
    }
    fsync(fd);
    for (int i = 0; i < 4; i++) {
      if (pread(fd, buf, 4096, static_cast<off_t>(i) * 4096) < 0)
        break;
    }
    std::free(buf);
  }
  close(fd);
  unlink(path.c_str());
}

void probe(const Hook& h, const std::string& dir) {
  g_last_libbpf_error.clear();
  vm_hookprobe_bpf* skel = vm_hookprobe_bpf__open();
  if (!skel) {
    std::printf("hook=%s target=%s load=fail attach=- hits=0 error=%s\n", h.kind, h.target,
                quote("open: " + std::string(std::strerror(errno))).c_str());
    return;
  }
  for (bpf_program* p = bpf_object__next_program(skel->obj, nullptr); p;
       p = bpf_object__next_program(skel->obj, p))
    bpf_program__set_autoload(p, p == h.prog(skel));
  skel->bss->target_tgid = static_cast<__u32>(getpid());
  int err = vm_hookprobe_bpf__load(skel);
  if (err) {
    std::printf("hook=%s target=%s load=fail attach=- hits=0 error=%s\n", h.kind, h.target,
                quote(std::string(std::strerror(-err)) + ": " + g_last_libbpf_error).c_str());
    vm_hookprobe_bpf__destroy(skel);
    return;
  }
  bpf_link* link = bpf_program__attach(h.prog(skel));
  if (!link) {
    err = -errno;
    std::printf("hook=%s target=%s load=ok attach=fail hits=0 error=%s\n", h.kind, h.target,
                quote(std::string(std::strerror(-err)) + ": " + g_last_libbpf_error).c_str());
    vm_hookprobe_bpf__destroy(skel);
    return;
  }
  trigger(dir, h.block_io);
  if (h.block_io)
    usleep(200 * 1000);  // completions may land a little later
  unsigned long long n = __atomic_load_n(&skel->bss->hits[h.hit_index], __ATOMIC_RELAXED);
  std::printf("hook=%s target=%s load=ok attach=ok hits=%llu\n", h.kind, h.target, n);
  bpf_link__destroy(link);
  vm_hookprobe_bpf__destroy(skel);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1)
    dir = argv[1];
  else if (const char* env = std::getenv("CEPHSCOPE_TEST_DIR"))
    dir = env;
  else
    dir = "/tmp";
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [DIR]\n", argv[0]);
    return 2;
  }
  libbpf_set_print(on_libbpf_print);
  const Hook hooks[] = {
      {"fentry", "vfs_read", 0, false,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_fentry_vfs_read; }},
      {"fexit", "vfs_read", 1, false,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_fexit_vfs_read; }},
      {"kprobe", "vfs_read", 2, false,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_kprobe_vfs_read; }},
      {"kretprobe", "vfs_read", 3, false,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_kretprobe_vfs_read; }},
      {"tp_btf", "block_rq_complete", 4, true,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_tp_btf_block_rq_complete; }},
      {"tracepoint", "block/block_rq_complete", 5, true,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_tp_block_rq_complete; }},
      {"tracepoint", "syscalls/sys_enter_read", 6, false,
       [](vm_hookprobe_bpf* s) { return s->progs.probe_tp_sys_enter_read; }},
  };
  for (const auto& h : hooks) {
    probe(h, dir);
    std::fflush(stdout);
  }
  return 0;
}
