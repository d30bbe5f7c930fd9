#include "profile/process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/unique_fd.h"
#include "profile/elf_file.h"

namespace cephscope::profile {

namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

ErrorKind kind_of(Refusal r) {
  switch (r) {
    case Refusal::kNoAccess:
      return ErrorKind::kSystem;
    case Refusal::kNotElf:
      return ErrorKind::kInvalidInput;
    case Refusal::kNoProcess:
    case Refusal::kNotMapped:
    case Refusal::kDeleted:
    case Refusal::kReplaced:
    case Refusal::kNoBuildId:
      break;
  }
  return ErrorKind::kNotFound;
}

Error refuse(Refusal r, std::string message, int code = 0) {
  Error e = make_error(kind_of(r), std::move(message), code);
  e.reason = std::string(to_string(r));
  return e;
}

Error sys_error(const std::string& path, int err) {
  return make_error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kSystem,
                    path + ": " + std::strerror(err), err);
}

// /proc files report size 0: read until end of file.
Result<std::string> read_pseudo_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return sys_error(path, errno);
  }
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return sys_error(path, errno);
    }
    if (n == 0) {
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

std::string_view to_string(Refusal r) {
  switch (r) {
    case Refusal::kNoProcess:
      return "no_process";
    case Refusal::kNoAccess:
      return "no_access";
    case Refusal::kNotMapped:
      return "not_mapped";
    case Refusal::kDeleted:
      return "deleted";
    case Refusal::kReplaced:
      return "replaced";
    case Refusal::kNotElf:
      return "not_elf";
    case Refusal::kNoBuildId:
      return "no_build_id";
  }
  return "not_elf";
}

bool module_name_matches(std::string_view file, std::string_view name) {
  return file == name || (file.size() > name.size() && file.starts_with(name) &&
                          file[name.size()] == '.' && name.find(".so") != std::string_view::npos);
}

std::vector<Mapping> parse_maps(std::string_view text) {
  std::vector<Mapping> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string line(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    Mapping m;
    char perms[8] = {};
    unsigned maj = 0;
    unsigned min = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
                    &m.start, &m.end, perms, &m.offset, &maj, &min, &m.inode, &path_at) < 7) {
      continue;
    }
    m.dev_major = maj;
    m.dev_minor = min;
    m.executable = perms[2] == 'x';
    if (path_at > 0 && static_cast<size_t>(path_at) <= line.size()) {
      m.path = line.substr(static_cast<size_t>(path_at));
    }
    if (m.path.ends_with(kDeletedSuffix)) {
      m.deleted = true;
      m.path.resize(m.path.size() - kDeletedSuffix.size());
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<Mapping>> read_maps(pid_t pid, const std::string& proc) {
  auto text = read_pseudo_file(proc + "/" + std::to_string(pid) + "/maps");
  if (!text.ok()) {
    return text.error();
  }
  return parse_maps(*text);
}

namespace {

// One reading of the process's maps. MAP_FILE_GONE: the mapping's map_files entry was not
// there to decide (the loader had remapped that range since maps was read).
Result<ModuleIdentity> identify_once(pid_t pid, std::string_view name, const std::string& proc,
                                     bool& map_file_gone) {
  const std::string base = proc + "/" + std::to_string(pid);
  auto maps_text = read_pseudo_file(base + "/maps");
  if (!maps_text.ok()) {
    const int err = maps_text.error().code;
    return refuse(err == ENOENT || err == ESRCH ? Refusal::kNoProcess : Refusal::kNoAccess,
                  maps_text.error().message, err);
  }
  std::string wanted_path;
  if (name.empty()) {
    std::error_code ec;
    wanted_path = std::filesystem::read_symlink(base + "/exe", ec).string();
    if (ec) {
      return refuse(ec.value() == ENOENT ? Refusal::kNoProcess : Refusal::kNoAccess,
                    base + "/exe: " + ec.message(), ec.value());
    }
    if (wanted_path.ends_with(kDeletedSuffix)) {
      wanted_path.resize(wanted_path.size() - kDeletedSuffix.size());
    }
  }
  const Mapping* found = nullptr;
  const std::vector<Mapping> maps = parse_maps(*maps_text);
  for (const Mapping& m : maps) {
    if (m.inode == 0 || m.path.empty() || m.path[0] != '/') {
      continue;
    }
    const bool match =
        name.empty() ? m.path == wanted_path : module_name_matches(file_name(m.path), name);
    // Prefer the executable mapping: it is what uprobes hit.
    if (match && (found == nullptr || (!found->executable && m.executable))) {
      found = &m;
    }
  }
  if (found == nullptr) {
    return refuse(Refusal::kNotMapped, std::string(name.empty() ? "executable" : name) +
                                           " is not mapped in " + std::to_string(pid));
  }
  ModuleIdentity id;
  id.pid = pid;
  id.name = file_name(found->path);
  id.path = found->path;
  id.root = base + "/root";
  id.host_path = id.root + found->path;
  id.dev = makedev(found->dev_major, found->dev_minor);
  id.inode = found->inode;
  id.main_executable = name.empty();
  struct stat by_path {};
  if (::stat(id.host_path.c_str(), &by_path) != 0) {
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      return refuse(Refusal::kNoAccess, id.host_path + ": " + std::strerror(err), err);
    }
    return refuse(Refusal::kDeleted,
                  found->path + " was deleted after " + std::to_string(pid) + " mapped it", err);
  }
  // The kernel marks a mapping " (deleted)" once its name is unlinked, which a rename over
  // it (a package upgrade) also does: the path then names a new file.
  if (found->deleted) {
    return refuse(Refusal::kReplaced,
                  id.host_path + " was replaced after " + std::to_string(pid) + " mapped it");
  }
  // The mapped file itself, even when deleted or shadowed (needs CAP_SYS_ADMIN): when it
  // cannot be reached, the path alone decides.
  char range[64];
  std::snprintf(range, sizeof range, "/map_files/%" PRIx64 "-%" PRIx64, found->start, found->end);
  const std::string mapped = base + range;
  struct stat by_map {};
  const bool have_map = ::stat(mapped.c_str(), &by_map) == 0;
  const int map_err = have_map ? 0 : errno;
  const bool same_as_maps = by_path.st_ino == id.inode && by_path.st_dev == id.dev;
  // overlayfs reports one device in maps and another in stat: then map_files decides.
  const bool same_as_map_file =
      have_map && by_path.st_ino == by_map.st_ino && by_path.st_dev == by_map.st_dev;
  if (!same_as_maps && !same_as_map_file) {
    map_file_gone = map_err == ENOENT;
    return refuse(Refusal::kReplaced, id.host_path + " is no longer the file " +
                                          std::to_string(pid) + " mapped (inode " +
                                          std::to_string(id.inode) + ", now " +
                                          std::to_string(by_path.st_ino) + ")");
  }
  auto elf = ElfFile::open(have_map ? mapped : id.host_path);
  if (!elf.ok() && have_map) {
    elf = ElfFile::open(id.host_path);
  }
  if (!elf.ok()) {
    return refuse(Refusal::kNotElf, elf.error().message, elf.error().code);
  }
  auto build_id = elf->build_id();
  if (!build_id.ok()) {
    return refuse(Refusal::kNoBuildId, build_id.error().message);
  }
  id.build_id = std::move(build_id).value();
  return id;
}

}  // namespace

Result<ModuleIdentity> identify_module(pid_t pid, std::string_view name, const std::string& proc) {
  // A process still loading its libraries (one just exec'd) remaps their ranges while it is
  // read: a range of maps gone from map_files is read again, not taken for a replaced file.
  constexpr int kReadings = 3;
  for (int i = 1;; ++i) {
    bool map_file_gone = false;
    auto id = identify_once(pid, name, proc, map_file_gone);
    if (id.ok() || !map_file_gone || i == kReadings) {
      return id;
    }
  }
}

}  // namespace cephscope::profile
