// cephscope_vm_loadcheck: asks the running kernel's verifier about every program of the given
// BPF objects, without attaching anything: the whole object at once, and one program at a time
// only when the kernel refuses the whole (each load of an object parses the kernel's BTF and
// creates its maps: a second or more per load under TCG). One line per program:
//   object=<file> program=<name> section=<sec> load=<ok|fail|absent> [insns=<n>]
//   [error="<verifier's last words>"]
// absent: an fentry/fexit program whose function this kernel does not have.
// Exit status 0 when it ran (whatever the verifier said), 2 on a usage error.
// A program refused with the object's defaults is tried again with its `*_with_q` flags set
// (the argument lists before Linux 5.11, which the daemon sets from the kernel's BTF):
// accepted so, it is reported ok with with_q=yes.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string g_log;  // everything libbpf said during the current load

int on_libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG)
    return 0;
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n > 0) {
    std::string s(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(s.data(), s.size(), fmt, args);
    s.resize(static_cast<size_t>(n));
    g_log += s;
  }
  return 0;
}

std::string basename_of(const std::string& p) {
  auto i = p.rfind('/');
  return i == std::string::npos ? p : p.substr(i + 1);
}

// The verifier's verdict: the line before its statistics ("verification time", "processed N
// insns"), else the last line of the load log, else the last thing libbpf said.
std::string verdict(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (!l.empty())
      lines.push_back(l);
  }
  std::string last;
  for (const auto& l : lines) {
    if (l.find("-- END PROG LOAD LOG --") != std::string::npos)
      break;
    if (l.rfind("verification time", 0) == 0 || l.rfind("processed ", 0) == 0)
      break;
    if (l.find("-- BEGIN PROG LOAD LOG --") != std::string::npos)
      continue;
    last = l;
  }
  if (last.empty() && !lines.empty())
    last = lines.back();
  for (auto& c : last)
    if (c == '"')
      c = '\'';
  if (last.size() > 300)
    last = last.substr(0, 300) + "...";
  return last;
}

// Sets every `*_with_q` variable of the object's .rodata to true; false when it has none.
bool set_with_q_flags(bpf_object* obj) {
  const btf* types = bpf_object__btf(obj);
  bpf_map* rodata = nullptr;
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, obj) {
    const std::string n = bpf_map__name(m);
    if (bpf_map__is_internal(m) && n.size() >= 7 && n.compare(n.size() - 7, 7, ".rodata") == 0)
      rodata = m;
  }
  if (types == nullptr || rodata == nullptr)
    return false;
  const int sec_id = btf__find_by_name_kind(types, ".rodata", BTF_KIND_DATASEC);
  if (sec_id < 0)
    return false;
  size_t size = 0;
  // Writable before load (libbpf 1.1 declares it const): the object's own copy of .rodata.
  auto* data = static_cast<unsigned char*>(
      const_cast<void*>(static_cast<const void*>(bpf_map__initial_value(rodata, &size))));
  const btf_type* sec = btf__type_by_id(types, static_cast<__u32>(sec_id));
  const btf_var_secinfo* var = btf_var_secinfos(sec);
  bool any = false;
  for (unsigned i = 0; data != nullptr && i < btf_vlen(sec); ++i, ++var) {
    const std::string name =
        btf__name_by_offset(types, btf__type_by_id(types, var->type)->name_off);
    if (name.size() > 7 && name.compare(name.size() - 7, 7, "_with_q") == 0 && var->offset < size) {
      data[var->offset] = 1;
      any = true;
    }
  }
  return any;
}

// A bare fentry/fexit program has its target set by the daemon: the syscall collector's
// fentry_<syscall> and fexit_<syscall> go on the architecture's syscall function. 0, or
// -ESRCH when the kernel has no such function.
int set_bare_target(bpf_program* prog) {
  const std::string sec = bpf_program__section_name(prog);
  const std::string name = bpf_program__name(prog);
  if ((sec != "fentry" && sec != "fexit") || name.find('_') == std::string::npos)
    return 0;
  const std::string fn = "__x64_sys_" + name.substr(name.find('_') + 1);
  return bpf_program__set_attach_target(prog, 0, fn.c_str());
}

void print_ok(const std::string& path, const std::string& name, const std::string& sec,
              unsigned insns, bool with_q) {
  std::printf("object=%s program=%s section=%s load=ok insns=%u%s\n", basename_of(path).c_str(),
              name.c_str(), sec.c_str(), insns, with_q ? " with_q=yes" : "");
}

// Loads program NAME of the object at PATH on its own; its fd's info into *insns when loaded.
int load_one(const std::string& path, const std::string& name, bool with_q, std::string* sec,
             unsigned* insns) {
  g_log.clear();
  bpf_object* obj = bpf_object__open_file(path.c_str(), nullptr);
  if (!obj)
    return -errno;
  bpf_program *target = nullptr, *p;
  bpf_object__for_each_program(p, obj) {
    bool me = name == bpf_program__name(p);
    bpf_program__set_autoload(p, me);
    if (me)
      target = p;
  }
  if (const int err = target ? set_bare_target(target) : 0; err != 0) {
    *sec = bpf_program__section_name(target);
    bpf_object__close(obj);
    return err;  // -ESRCH: the kernel has no such function
  }
  int err = with_q && !set_with_q_flags(obj) ? -ENOENT : bpf_object__load(obj);
  *sec = target ? bpf_program__section_name(target) : "-";
  if (!err) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(target), &info, &len) == 0)
      *insns = info.xlated_prog_len / 8;
  }
  bpf_object__close(obj);
  return err;
}

// Loads every program of the object at PATH in one load and prints each as loaded. False, with
// nothing printed, when any program or map is refused, or when a bare fentry/fexit program's
// function is missing here.
bool load_all(const std::string& path) {
  bpf_object* obj = bpf_object__open_file(path.c_str(), nullptr);
  if (!obj)
    return false;
  bool ok = true;
  bpf_program* p;
  bpf_object__for_each_program(p, obj) {
    bpf_program__set_autoload(p, true);
    ok = ok && set_bare_target(p) == 0;
  }
  ok = ok && bpf_object__load(obj) == 0;
  if (ok) {
    bpf_object__for_each_program(p, obj) {
      bpf_prog_info info{};
      __u32 len = sizeof(info);
      const bool got = bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0;
      print_ok(path, bpf_program__name(p), bpf_program__section_name(p),
               got ? info.xlated_prog_len / 8 : 0, false);
    }
    std::fflush(stdout);
  }
  bpf_object__close(obj);
  return ok;
}

int check_object(const std::string& path) {
  if (load_all(path))
    return 0;
  std::vector<std::string> names;
  {
    bpf_object* obj = bpf_object__open_file(path.c_str(), nullptr);
    if (!obj) {
      std::printf("object=%s program=- section=- load=fail error=\"open: %s\"\n",
                  basename_of(path).c_str(), std::strerror(errno));
      return 1;
    }
    bpf_program* p;
    bpf_object__for_each_program(p, obj) names.emplace_back(bpf_program__name(p));
    bpf_object__close(obj);
  }
  for (const auto& name : names) {
    std::string sec;
    unsigned insns = 0;
    int err = load_one(path, name, false, &sec, &insns);
    const std::string first_log = g_log;
    bool with_q = false;
    if (err && load_one(path, name, true, &sec, &insns) == 0) {
      err = 0;
      with_q = true;
    }
    const bool traces_function = sec.rfind("fentry", 0) == 0 || sec.rfind("fexit", 0) == 0;
    if (err == -ESRCH && traces_function) {
      // The daemon loads such a program only where the kernel's BTF has its function.
      std::printf("object=%s program=%s section=%s load=absent\n", basename_of(path).c_str(),
                  name.c_str(), sec.c_str());
    } else if (err) {
      std::printf("object=%s program=%s section=%s load=fail error=\"%s: %s\"\n",
                  basename_of(path).c_str(), name.c_str(), sec.c_str(), std::strerror(-err),
                  verdict(first_log).c_str());
    } else {
      print_ok(path, name, sec, insns, with_q);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OBJECT.bpf.o...\n", argv[0]);
    return 2;
  }
  libbpf_set_print(on_libbpf_print);
  for (int i = 1; i < argc; i++) check_object(argv[i]);
  return 0;
}
