#include "ceph_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace cephscope::test {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

 private:
  int fd_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    fail("cannot read " + path + ": " + errno_text(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

double to_double(std::string_view text, std::string_view what) {
  std::string s(trim(text));
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || end == nullptr || *end != '\0') {
    fail("rados bench: cannot read a number from '" + s + "' (" + std::string(what) + ")");
  }
  return v;
}

std::uint64_t to_u64(std::string_view text, std::string_view what) {
  std::string s(trim(text));
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || errno != 0 || end == nullptr || *end != '\0') {
    fail("rados: cannot read a count from '" + s + "' (" + std::string(what) + ")");
  }
  return v;
}

std::uint64_t sub(std::uint64_t after, std::uint64_t before, const char* name) {
  if (after < before) {
    fail(std::string("perf counter ") + name + " went backwards (" + std::to_string(before) +
         " -> " + std::to_string(after) + "): did the OSD restart?");
  }
  return after - before;
}

LatencyCounter sub(const LatencyCounter& after, const LatencyCounter& before, const char* name) {
  return LatencyCounter{sub(after.avgcount, before.avgcount, name), after.sum - before.sum};
}

LatencyCounter latency(const nlohmann::json& osd, const char* name) {
  const auto& c = osd.at(name);
  return LatencyCounter{c.at("avgcount").get<std::uint64_t>(), c.at("sum").get<double>()};
}

}  // namespace

// ---------------------------------------------------------------------------- commands

std::string describe(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) {
      s += ' ';
    }
    if (a.empty() || a.find_first_of(" \t'\"$") != std::string::npos) {
      s += '\'' + a + '\'';
    } else {
      s += a;
    }
  }
  return s;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) {
    fail("run_command: empty argv");
  }
  int out_pipe[2];
  int err_pipe[2];
  int exec_pipe[2];  // carries errno if execvp fails; closed by a successful exec
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      pipe2(exec_pipe, O_CLOEXEC) != 0) {
    fail("pipe2: " + errno_text(errno));
  }
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]), err_r(err_pipe[0]), err_w(err_pipe[1]);
  Fd exec_r(exec_pipe[0]), exec_w(exec_pipe[1]);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);

  const auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    fail("fork: " + errno_text(errno));
  }
  if (pid == 0) {
    // child: own process group (so a timeout kills everything it started), stdio redirected
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_pipe[1], 1) < 0 ||
        dup2(err_pipe[1], 2) < 0) {
      int e = errno;
      (void)!write(exec_pipe[1], &e, sizeof e);
      _exit(127);
    }
    execvp(args[0], args.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  out_w.reset();
  err_w.reset();
  exec_w.reset();

  int exec_errno = 0;
  ssize_t n = read(exec_r.get(), &exec_errno, sizeof exec_errno);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    waitpid(pid, nullptr, 0);
    fail("cannot run " + describe(argv) + ": " + errno_text(exec_errno));
  }

  CommandResult result;
  const auto deadline = start + timeout;
  bool out_open = true;
  bool err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[2];
    nfds_t nfds = 0;
    if (out_open) {
      fds[nfds++] = pollfd{out_r.get(), POLLIN, 0};
    }
    if (err_open) {
      fds[nfds++] = pollfd{err_r.get(), POLLIN, 0};
    }
    int rc = poll(fds, nfds, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (rc < 0) {
      if (errno == EINTR) {
        continue;
      }
      kill(-pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      fail("poll: " + errno_text(errno));
    }
    for (nfds_t i = 0; i < nfds; ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      bool is_out = fds[i].fd == out_r.get();
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (is_out ? result.out : result.err).append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        (is_out ? out_open : err_open) = false;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

// ---------------------------------------------------------------------------- the cluster

ClusterInfo parse_cluster_info(std::string_view json) {
  try {
    auto j = nlohmann::json::parse(json);
    auto daemon = [](const nlohmann::json& d) {
      CephDaemon c;
      c.name = d.at("name").get<std::string>();
      c.id = d.contains("id") ? d.at("id").get<int>() : -1;
      c.pid = d.at("pid").get<pid_t>();
      c.asok = d.at("asok").get<std::string>();
      c.container = d.value("container", std::string());
      return c;
    };
    ClusterInfo info;
    info.dir = j.at("dir").get<std::string>();
    info.release = j.value("release", std::string("pacific"));
    info.tool_prefix = j.value("tool_prefix", std::vector<std::string>{});
    info.conf = j.at("conf").get<std::string>();
    info.keyring = j.at("keyring").get<std::string>();
    info.fsid = j.at("fsid").get<std::string>();
    info.mon_addr = j.at("mon_addr").get<std::string>();
    info.pool = j.at("pool").get<std::string>();
    info.pool_size = j.at("pool_size").get<int>();
    info.mon = daemon(j.at("mon"));
    info.mgr = daemon(j.at("mgr"));
    for (const auto& o : j.at("osds")) {
      info.osds.push_back(daemon(o));
    }
    if (info.osds.empty()) {
      fail("no OSDs");
    }
    return info;
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("cluster.json: ") + e.what());
  }
}

ClusterInfo load_cluster_info(const std::string& path) {
  try {
    return parse_cluster_info(read_file(path));
  } catch (const std::runtime_error& e) {
    fail(path + ": " + e.what());
  }
}

std::optional<ClusterInfo> cluster_from_env() {
  const char* dir = std::getenv("CEPHSCOPE_CEPH_DIR");
  if (dir == nullptr || *dir == '\0') {
    return std::nullopt;
  }
  return load_cluster_info(std::string(dir) + "/cluster.json");
}

std::uint64_t cluster_rss_bytes(const ClusterInfo& cluster) {
  std::vector<const CephDaemon*> daemons{&cluster.mon, &cluster.mgr};
  for (const auto& o : cluster.osds) {
    daemons.push_back(&o);
  }
  std::uint64_t total = 0;
  for (const auto* d : daemons) {
    std::istringstream status(read_file("/proc/" + std::to_string(d->pid) + "/status"));
    std::string line;
    bool found = false;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) {
        total += std::stoull(line.substr(6)) * 1024;  // "VmRSS:   123456 kB"
        found = true;
      }
    }
    if (!found) {
      fail(d->name + " (pid " + std::to_string(d->pid) + ") has no VmRSS: not running?");
    }
  }
  return total;
}

// ---------------------------------------------------------------------------- rados bench

const char* to_string(BenchMode mode) {
  switch (mode) {
    case BenchMode::kWrite:
      return "write";
    case BenchMode::kSeq:
      return "seq";
    case BenchMode::kRand:
      return "rand";
  }
  return "?";
}

BenchSummary parse_rados_bench(std::string_view text) {
  BenchSummary s;
  std::map<std::string, std::string, std::less<>> kv;
  bool in_summary = false;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? text.npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    std::string key(trim(line.substr(0, colon)));
    if (key == "Total time run") {
      in_summary = true;  // the per-second table and the header come before
    }
    if (in_summary) {
      kv[key] = std::string(trim(line.substr(colon + 1)));
    }
  }
  if (!in_summary) {
    fail("rados bench output has no summary (no 'Total time run:' line):\n" + std::string(text));
  }
  auto need = [&](const char* key) -> const std::string& {
    auto it = kv.find(key);
    if (it == kv.end()) {
      fail(std::string("rados bench summary lacks '") + key + ":'\n" + std::string(text));
    }
    return it->second;
  };
  if (kv.count("Total writes made")) {
    s.mode = BenchMode::kWrite;
    s.total_ops = to_u64(need("Total writes made"), "Total writes made");
    s.op_size = to_u64(need("Write size"), "Write size");
  } else if (kv.count("Total reads made")) {
    s.mode = BenchMode::kSeq;  // rados prints the same summary for seq and rand
    s.total_ops = to_u64(need("Total reads made"), "Total reads made");
    s.op_size = to_u64(need("Read size"), "Read size");
  } else {
    fail("rados bench summary has neither 'Total writes made' nor 'Total reads made':\n" +
         std::string(text));
  }
  s.total_time_s = to_double(need("Total time run"), "Total time run");
  s.object_size = to_u64(need("Object size"), "Object size");
  s.bandwidth_mb_s = to_double(need("Bandwidth (MB/sec)"), "Bandwidth");
  s.avg_iops = to_double(need("Average IOPS"), "Average IOPS");
  s.stddev_iops = to_double(need("Stddev IOPS"), "Stddev IOPS");
  s.max_iops = to_double(need("Max IOPS"), "Max IOPS");
  s.min_iops = to_double(need("Min IOPS"), "Min IOPS");
  s.avg_latency_s = to_double(need("Average Latency(s)"), "Average Latency");
  if (kv.count("Stddev Latency(s)")) {
    s.stddev_latency_s = to_double(kv["Stddev Latency(s)"], "Stddev Latency");
  }
  s.max_latency_s = to_double(need("Max latency(s)"), "Max latency");
  s.min_latency_s = to_double(need("Min latency(s)"), "Min latency");
  return s;
}

std::vector<std::string> tool_argv(const ClusterInfo& cluster, const std::string& tool,
                                   const std::vector<std::string>& args) {
  std::vector<std::string> argv = cluster.tool_prefix;
  argv.insert(argv.end(), {tool, "-c", cluster.conf});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> rados_bench_argv(const ClusterInfo& cluster, const BenchOptions& opt) {
  auto argv = tool_argv(cluster, "rados",
                        {"-p", cluster.pool, "bench", std::to_string(opt.seconds),
                         to_string(opt.mode), "-t", std::to_string(opt.threads)});
  if (opt.mode == BenchMode::kWrite) {
    argv.insert(argv.end(), {"-b", std::to_string(opt.block_size)});
    if (opt.no_cleanup) {
      argv.emplace_back("--no-cleanup");
    }
  }
  return argv;
}

BenchSummary run_rados_bench(const ClusterInfo& cluster, const BenchOptions& opt) {
  auto argv = rados_bench_argv(cluster, opt);
  // rados bench waits for the ops in flight at the end; a full OSD blocks writes forever
  auto r = run_command(argv, std::chrono::seconds(opt.seconds + 120));
  if (r.timed_out) {
    fail(describe(argv) + ": timed out after " + std::to_string(r.seconds) +
         " s (a full OSD blocks writes silently: ceph -s, ceph osd df)\n" + r.out + r.err);
  }
  if (!r.ok()) {
    fail(describe(argv) + ": exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err);
  }
  auto s = parse_rados_bench(r.out);
  if (opt.mode != BenchMode::kWrite) {
    s.mode = opt.mode;
  }
  return s;
}

std::uint64_t parse_rados_cleanup(std::string_view text) {
  static constexpr std::string_view kRemoved = "Removed ";
  if (trim(text).find_first_not_of('\n') == std::string_view::npos) {
    return 0;  // rados prints nothing when there is no benchmark_last_metadata to clean up
  }
  std::size_t at = text.find(kRemoved);
  if (at == std::string_view::npos) {
    fail("rados cleanup output has no 'Removed N objects':\n" + std::string(text));
  }
  std::string_view rest = text.substr(at + kRemoved.size());
  std::size_t space = rest.find(' ');
  return to_u64(rest.substr(0, space), "Removed N objects");
}

std::uint64_t rados_cleanup(const ClusterInfo& cluster) {
  const auto argv = tool_argv(cluster, "rados", {"-p", cluster.pool, "cleanup"});
  auto r = run_command(argv, std::chrono::minutes(5));
  if (!r.ok()) {
    fail(describe(argv) + (r.timed_out ? ": timed out" : ": exit " + std::to_string(r.exit_code)) +
         "\n" + r.out + r.err);
  }
  return parse_rados_cleanup(r.out);
}

CleanupGuard::~CleanupGuard() {
  try {
    rados_cleanup(cluster);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cleanup failed: %s\n", e.what());
  }
}

// ---------------------------------------------------------------------------- perf counters

OsdCounters parse_osd_perf_dump(std::string_view json) {
  try {
    auto j = nlohmann::json::parse(json);
    const auto& o = j.at("osd");
    auto u = [&](const char* name) { return o.at(name).get<std::uint64_t>(); };
    OsdCounters c;
    c.op = u("op");
    c.op_w = u("op_w");
    c.op_r = u("op_r");
    c.op_rw = u("op_rw");
    c.op_in_bytes = u("op_in_bytes");
    c.op_out_bytes = u("op_out_bytes");
    c.op_latency = latency(o, "op_latency");
    c.op_w_latency = latency(o, "op_w_latency");
    c.op_r_latency = latency(o, "op_r_latency");
    c.subop = u("subop");
    c.subop_w = u("subop_w");
    c.subop_w_in_bytes = u("subop_w_in_bytes");
    c.subop_w_latency = latency(o, "subop_w_latency");
    if (j.contains("bluestore")) {
      for (std::size_t i = 0; i < kBlueStoreStates.size(); ++i) {
        c.bluestore_state[i] = latency(j.at("bluestore"), kBlueStoreStates[i]);
      }
    }
    for (std::size_t i = 0; i < kStoreCounters.size(); ++i) {
      const auto& [section, names] = kStoreCounters[i];
      for (std::string_view rest = names; j.contains(section) && !rest.empty();) {
        const std::string name(rest.substr(0, rest.find('|')));
        rest.remove_prefix(std::min(rest.size(), name.size() + 1));
        if (j.at(section).contains(name)) {
          c.store_bytes[i] = j.at(section).at(name).get<std::uint64_t>();
          break;
        }
      }
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("perf dump: ") + e.what());
  }
}

OsdCounters delta(const OsdCounters& b, const OsdCounters& a) {
  OsdCounters d;
  d.op = sub(a.op, b.op, "op");
  d.op_w = sub(a.op_w, b.op_w, "op_w");
  d.op_r = sub(a.op_r, b.op_r, "op_r");
  d.op_rw = sub(a.op_rw, b.op_rw, "op_rw");
  d.op_in_bytes = sub(a.op_in_bytes, b.op_in_bytes, "op_in_bytes");
  d.op_out_bytes = sub(a.op_out_bytes, b.op_out_bytes, "op_out_bytes");
  d.op_latency = sub(a.op_latency, b.op_latency, "op_latency");
  d.op_w_latency = sub(a.op_w_latency, b.op_w_latency, "op_w_latency");
  d.op_r_latency = sub(a.op_r_latency, b.op_r_latency, "op_r_latency");
  d.subop = sub(a.subop, b.subop, "subop");
  d.subop_w = sub(a.subop_w, b.subop_w, "subop_w");
  d.subop_w_in_bytes = sub(a.subop_w_in_bytes, b.subop_w_in_bytes, "subop_w_in_bytes");
  d.subop_w_latency = sub(a.subop_w_latency, b.subop_w_latency, "subop_w_latency");
  for (std::size_t i = 0; i < kBlueStoreStates.size(); ++i) {
    d.bluestore_state[i] = sub(a.bluestore_state[i], b.bluestore_state[i], kBlueStoreStates[i]);
  }
  for (std::size_t i = 0; i < kStoreCounters.size(); ++i) {
    d.store_bytes[i] = sub(a.store_bytes[i], b.store_bytes[i], kStoreCounters[i].second);
  }
  return d;
}

OsdSnapshot delta(const OsdSnapshot& before, const OsdSnapshot& after) {
  OsdSnapshot d;
  for (const auto& [id, a] : after) {
    auto it = before.find(id);
    if (it == before.end()) {
      fail("osd." + std::to_string(id) + " is in the second snapshot only");
    }
    d[id] = delta(it->second, a);
  }
  if (before.size() != after.size()) {
    fail("the snapshots cover different OSDs");
  }
  return d;
}

OsdCounters sum(const OsdSnapshot& snapshot) {
  OsdCounters t;
  auto add = [](LatencyCounter& x, const LatencyCounter& y) {
    x.avgcount += y.avgcount;
    x.sum += y.sum;
  };
  for (const auto& [id, c] : snapshot) {
    t.op += c.op;
    t.op_w += c.op_w;
    t.op_r += c.op_r;
    t.op_rw += c.op_rw;
    t.op_in_bytes += c.op_in_bytes;
    t.op_out_bytes += c.op_out_bytes;
    add(t.op_latency, c.op_latency);
    add(t.op_w_latency, c.op_w_latency);
    add(t.op_r_latency, c.op_r_latency);
    t.subop += c.subop;
    t.subop_w += c.subop_w;
    t.subop_w_in_bytes += c.subop_w_in_bytes;
    add(t.subop_w_latency, c.subop_w_latency);
    for (std::size_t i = 0; i < kBlueStoreStates.size(); ++i) {
      add(t.bluestore_state[i], c.bluestore_state[i]);
    }
    for (std::size_t i = 0; i < kStoreCounters.size(); ++i) {
      t.store_bytes[i] += c.store_bytes[i];
    }
  }
  return t;
}

std::string admin_socket_command(const std::string& asok, std::string_view command,
                                 std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (asok.size() >= sizeof addr.sun_path) {
    fail("admin socket path too long: " + asok);
  }
  std::memcpy(addr.sun_path, asok.c_str(), asok.size() + 1);
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    fail("socket: " + errno_text(errno));
  }
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    fail("connect to admin socket " + asok + ": " + errno_text(errno));
  }
  std::string request(command);
  request.push_back('\0');
  for (std::size_t off = 0; off < request.size();) {
    ssize_t n = send(fd.get(), request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail("write to admin socket " + asok + ": " + errno_text(errno));
    }
    off += static_cast<std::size_t>(n);
  }
  auto read_exact = [&](char* dst, std::size_t len) {
    for (std::size_t off = 0; off < len;) {
      ssize_t n = recv(fd.get(), dst + off, len - off, 0);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n == 0) {
        fail("admin socket " + asok + " closed the connection early");
      }
      if (n < 0) {
        fail("read from admin socket " + asok + ": " + errno_text(errno));
      }
      off += static_cast<std::size_t>(n);
    }
  };
  std::uint32_t be_len = 0;
  read_exact(reinterpret_cast<char*>(&be_len), sizeof be_len);
  std::string reply(ntohl(be_len), '\0');
  read_exact(reply.data(), reply.size());
  return reply;
}

OsdSnapshot snapshot_osds(const ClusterInfo& cluster) {
  OsdSnapshot snap;
  for (const auto& osd : cluster.osds) {
    std::string json = admin_socket_command(osd.asok, R"({"prefix": "perf dump"})");
    try {
      snap[osd.id] = parse_osd_perf_dump(json);
    } catch (const std::runtime_error& e) {
      fail(osd.name + " (" + osd.asok + "): " + e.what());
    }
  }
  return snap;
}

}  // namespace cephscope::test
