// cephscope_vm_loadcheck: asks the running kernel's verifier about every program of the given
// BPF objects, one program at a time, without attaching anything. One line per program:
//   object=<file> program=<name> section=<sec> load=<ok|fail> [insns=<n>] [error="<verifier's last
//   words>"]
// Exit status 0 when it ran (whatever the verifier said), 2 on a usage error.
#include <bpf/bpf.h>
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

int check_object(const std::string& path) {
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
    g_log.clear();
    bpf_object* obj = bpf_object__open_file(path.c_str(), nullptr);
    if (!obj)
      continue;
    bpf_program *target = nullptr, *p;
    bpf_object__for_each_program(p, obj) {
      bool me = name == bpf_program__name(p);
      bpf_program__set_autoload(p, me);
      if (me)
        target = p;
    }
    int err = bpf_object__load(obj);
    const char* sec = target ? bpf_program__section_name(target) : "-";
    if (err) {
      std::printf("object=%s program=%s section=%s load=fail error=\"%s: %s\"\n",
                  basename_of(path).c_str(), name.c_str(), sec, std::strerror(-err),
                  verdict(g_log).c_str());
    } else {
      bpf_prog_info info{};
      __u32 len = sizeof(info);
      unsigned insns = 0;
      if (bpf_obj_get_info_by_fd(bpf_program__fd(target), &info, &len) == 0)
        insns = info.xlated_prog_len / 8;
      std::printf("object=%s program=%s section=%s load=ok insns=%u\n", basename_of(path).c_str(),
                  name.c_str(), sec, insns);
    }
    std::fflush(stdout);
    bpf_object__close(obj);
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
