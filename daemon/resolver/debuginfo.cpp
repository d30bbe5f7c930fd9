#include "resolver/debuginfo.h"

#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/unique_fd.h"

#ifdef CEPHSCOPE_HAVE_DEBUGINFOD
#include <elfutils/debuginfod.h>
#endif

namespace cephscope::profile {

namespace {

namespace fs = std::filesystem;

std::string under(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") {
    return path;
  }
  return (fs::path(root) / fs::path(path).relative_path()).string();
}

// CRC32 of a whole file, as .gnu_debuglink records it. Only used for debug files without a
// build-id note.
Result<uint32_t> file_crc32(const ElfFile& f) {
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t kChunk = 1 << 20;
  for (uint64_t off = 0; off < f.file_size(); off += kChunk) {
    auto bytes = f.read_at(off, kChunk);
    if (!bytes.ok()) {
      return bytes.error();
    }
    if (bytes->empty()) {
      return make_error(ErrorKind::kInvalidInput, f.path() + ": shrank while read");
    }
    crc = crc32(crc, bytes->data(), static_cast<uInt>(bytes->size()));
  }
  return static_cast<uint32_t>(crc);
}

// Success when PATH is a debug file for BUILD_ID, else why not.
Status check_candidate(const Result<ElfFile>& f, const std::string& build_id,
                       std::optional<uint32_t> crc = std::nullopt) {
  if (!f.ok()) {
    return f.error();
  }
  const std::string& path = f->path();
  if (!f->has_data_section(".debug_info")) {
    return make_error(ErrorKind::kDwarf, path + ": no .debug_info");
  }
  auto id = f->build_id();
  if (id.ok()) {
    if (*id != build_id) {
      return make_error(ErrorKind::kInvalidInput,
                        path + ": build-id " + *id + ", want " + build_id);
    }
    return ok_status();
  }
  if (crc) {
    auto actual = file_crc32(*f);
    if (!actual.ok()) {
      return actual.error();
    }
    if (*actual == *crc) {
      return ok_status();
    }
  }
  return make_error(ErrorKind::kInvalidInput, path + ": no build-id to check it against");
}

#ifdef CEPHSCOPE_HAVE_DEBUGINFOD
bool debuginfod_configured() {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  return urls != nullptr && *urls != '\0';
}

// The path of the client's cached copy of BUILD_ID's debug file.
Result<std::string> from_debuginfod(const std::string& build_id) {
  std::unique_ptr<debuginfod_client, decltype(&debuginfod_end)> client(debuginfod_begin(),
                                                                       &debuginfod_end);
  if (!client) {
    return make_error(ErrorKind::kSystem, "debuginfod: cannot start a client");
  }
  char* path = nullptr;
  // A hex build-id may be passed as text with length 0.
  const UniqueFd fd(debuginfod_find_debuginfo(
      client.get(), reinterpret_cast<const unsigned char*>(build_id.c_str()), 0, &path));
  if (!fd.valid()) {
    const int err = -fd.get();
    return make_error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kSystem,
                      "debuginfod: " + std::string(std::strerror(err)), err);
  }
  std::string out = path != nullptr ? path : "";
  std::free(path);
  return out;
}
#endif

}  // namespace

std::string_view to_string(DebugSource s) {
  switch (s) {
    case DebugSource::kExplicit:
      return "explicit";
    case DebugSource::kEmbedded:
      return "embedded";
    case DebugSource::kBuildIdHost:
      return "build-id (host)";
    case DebugSource::kBuildIdRoot:
      return "build-id (target root)";
    case DebugSource::kDebuglink:
      return "gnu_debuglink";
    case DebugSource::kDebuginfod:
      return "debuginfod";
  }
  return "explicit";
}

bool have_debuginfod() {
#ifdef CEPHSCOPE_HAVE_DEBUGINFOD
  return true;
#else
  return false;
#endif
}

Result<DebugFileRef> find_debuginfo(const ElfFile& binary, const std::string& build_id,
                                    const std::string& binary_path, const DebugSearch& search) {
  if (!search.explicit_file.empty()) {
    if (Status s = check_candidate(ElfFile::open(search.explicit_file), build_id); !s.ok()) {
      return make_error(ErrorKind::kInvalidInput, s.error().message, s.error().code);
    }
    return DebugFileRef{search.explicit_file, DebugSource::kExplicit, ""};
  }
  if (binary.has_data_section(".debug_info")) {
    return DebugFileRef{binary.path(), DebugSource::kEmbedded, ""};
  }
  std::vector<std::string> tried;
  // A candidate in the target's root is opened inside it (symlinks stay in the root, a FIFO
  // or device is refused); a host one as a regular file.
  const bool in_root = search.target_root_fd >= 0;
  auto attempt = [&](const std::string& path, DebugSource source,
                     std::optional<uint32_t> crc = std::nullopt) -> std::optional<DebugFileRef> {
    const bool inside = in_root && source != DebugSource::kBuildIdHost &&
                        source != DebugSource::kDebuginfod &&
                        path.starts_with(search.target_root + "/");
    const std::string inner = inside ? path.substr(search.target_root.size()) : "";
    auto f = inside ? ElfFile::open_in(search.target_root_fd, search.target_root, inner)
                    : ElfFile::open(path);
    if (!f.ok() && f.error().reason == "not_found") {
      return std::nullopt;
    }
    if (Status s = check_candidate(f, build_id, crc); !s.ok()) {
      tried.push_back(s.error().message);
      return std::nullopt;
    }
    return DebugFileRef{path, source, inner};
  };

  if (build_id.size() > 2) {
    const std::string rel = search.debug_dir + "/.build-id/" + build_id.substr(0, 2) + "/" +
                            build_id.substr(2) + ".debug";
    if (auto r = attempt(under(search.host_root, rel), DebugSource::kBuildIdHost)) {
      return *r;
    }
    if (!search.target_root.empty()) {
      if (auto r = attempt(under(search.target_root, rel), DebugSource::kBuildIdRoot)) {
        return *r;
      }
    }
  }
  if (auto link = binary.debuglink()) {
    const std::string dir = fs::path(binary_path).parent_path().string();
    const std::string root = search.target_root.empty() ? search.host_root : search.target_root;
    for (const std::string& d : {dir, dir + "/.debug", search.debug_dir + dir}) {
      if (auto r = attempt(under(root, d + "/" + link->name), DebugSource::kDebuglink, link->crc)) {
        return *r;
      }
    }
  }
#ifdef CEPHSCOPE_HAVE_DEBUGINFOD
  if (search.debuginfod && debuginfod_configured()) {
    auto path = from_debuginfod(build_id);
    if (!path.ok()) {
      tried.push_back(path.error().message);
    } else if (auto r = attempt(*path, DebugSource::kDebuginfod)) {
      return *r;
    }
  }
#endif
  std::string message = "no debuginfo for build-id " + build_id;
  for (const auto& t : tried) {
    message += "; " + t;
  }
  return make_error(ErrorKind::kNotFound, message);
}

}  // namespace cephscope::profile
