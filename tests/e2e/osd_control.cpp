// The test cluster's OSDs as processes: how one was started, restarting it the same way, and
// what the cluster says about it. Used by test_daemon_osd.cpp and test_osd_stages.cpp.
#include "osd_control.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace cephscope::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      throw std::runtime_error("cannot write " + tmp);
    }
  }
  fs::rename(tmp, path);
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\0', start);
    if (end == std::string::npos) {
      end = s.size();
    }
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string exe_of(pid_t pid) {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return ec ? std::string() : p.string();
}

// A process that exists and is not a zombie.
std::string osd_only_config(const std::string& osd_options) {
  return "log_level: info\n"
         "discovery:\n"
         "  scan_interval: 1s\n"
         "  ceph_osd: true\n"
         "  rados_clients: false\n"
         "collectors:\n"
         "  syscall: {enabled: false}\n"
         "  block: {enabled: false}\n"
         "  vfs: {enabled: false}\n"
         "  osd: {enabled: true" +
         osd_options + "}\n";
}

bool alive(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

std::optional<double> poll_until(const std::function<bool()>& done,
                                 std::chrono::milliseconds timeout,
                                 std::chrono::milliseconds period) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (done()) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (std::chrono::steady_clock::now() - t0 > timeout) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(period);
  }
}

std::string which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = dir + "/";
    candidate += name;
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  throw std::runtime_error(name + " not found in PATH");
}

// ------------------------------------------------------------------------- cluster state

nlohmann::json ceph_json(const ClusterInfo& cluster, const std::vector<std::string>& args) {
  auto argv = tool_argv(cluster, "ceph", {"--connect-timeout", "15"});
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"-f", "json"});
  auto r = run_command(argv, 60s);
  if (!r.ok()) {
    throw std::runtime_error(describe(argv) + ": exit " + std::to_string(r.exit_code) + "\n" +
                             r.err);
  }
  if (r.out.find_first_not_of(" \t\r\n") == std::string::npos) {
    return nullptr;  // commands that change state may print nothing
  }
  return nlohmann::json::parse(r.out);
}

bool osds_up(const ClusterInfo& cluster) {
  try {
    auto s = ceph_json(cluster, {"osd", "stat"});
    const auto n = static_cast<int>(cluster.osds.size());
    return s.at("num_up_osds").get<int>() == n && s.at("num_in_osds").get<int>() == n;
  } catch (const std::exception&) {
    return false;
  }
}

std::string cluster_status(const ClusterInfo& cluster) {
  const auto r = run_command(tool_argv(cluster, "ceph", {"-s"}));
  return r.exit_code == 0 ? r.out : "ceph -s: exit " + std::to_string(r.exit_code) + "\n" + r.err;
}

std::optional<OsdMapEntry> osd_map_entry(const ClusterInfo& cluster, int id) {
  try {
    auto dump = ceph_json(cluster, {"osd", "dump"});
    for (const auto& o : dump.at("osds")) {
      if (o.at("osd").get<int>() == id) {
        return OsdMapEntry{o.at("up").get<int>() == 1, o.at("up_from").get<long>()};
      }
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

bool pgs_clean(const ClusterInfo& cluster) {
  try {
    auto s = ceph_json(cluster, {"pg", "stat"}).at("pg_summary");
    const auto total = s.at("num_pgs").get<int>();
    int clean = 0;
    for (const auto& st : s.at("num_pg_by_state")) {
      if (st.at("name") != "active+clean") {
        return false;
      }
      clean += st.at("num").get<int>();
    }
    return total > 0 && clean == total;
  } catch (const std::exception&) {
    return false;
  }
}

// ------------------------------------------------------------------------- OSD restart

Launch launch_of(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  Launch l;
  l.exe = exe_of(pid);
  l.argv = split_nul(read_file(proc + "/cmdline"));
  l.env = split_nul(read_file(proc + "/environ"));
  std::error_code ec;
  l.cwd = fs::read_symlink(proc + "/cwd", ec).string();
  if (l.exe.empty() || l.argv.empty()) {
    throw std::runtime_error("cannot read the command line of pid " + std::to_string(pid));
  }
  return l;
}

// As cluster.sh's start_daemon: `setsid BIN -f -c CONF ARGS </dev/null >>LOG 2>&1`. The OSD is
// this process's child only until the test exits (then init adopts it, as it adopted the one
// cluster.sh started). Returns the pid: the process exists when this returns.
pid_t start_like(const Launch& l, const std::string& log_path) {
  std::vector<char*> argv;
  for (const auto& a : l.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : l.env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) {
      _exit(126);
    }
    close_range(3, ~0U, 0);
    if (!l.cwd.empty()) {
      (void)!chdir(l.cwd.c_str());
    }
    execve(l.exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// Records the restarted OSD's pid where cluster.sh and the harness look for it: DIR/pid/osd.N.pid
// (cluster.sh down stops it from there), DIR/env and DIR/cluster.json.
void record_pid(ClusterInfo& cluster, int osd_id, pid_t pid) {
  const std::string dir = cluster.dir;
  write_file_atomic(dir + "/pid/osd." + std::to_string(osd_id) + ".pid",
                    std::to_string(pid) + "\n");

  const std::string key = "export CEPHSCOPE_CEPH_OSD_" + std::to_string(osd_id) + "_PID=";
  std::istringstream env(read_file(dir + "/env"));
  std::string line;
  std::string out;
  bool replaced = false;
  while (std::getline(env, line)) {
    if (line.rfind(key, 0) == 0) {
      line = key + "'" + std::to_string(pid) + "'";
      replaced = true;
    }
    out += line + "\n";
  }
  if (!replaced) {
    throw std::runtime_error(dir + "/env has no " + key + " line");
  }
  write_file_atomic(dir + "/env", out);

  auto j = nlohmann::json::parse(read_file(dir + "/cluster.json"));
  for (auto& o : j.at("osds")) {
    if (o.at("id").get<int>() == osd_id) {
      o["pid"] = pid;
    }
  }
  write_file_atomic(dir + "/cluster.json", j.dump(2) + "\n");

  for (auto& o : cluster.osds) {
    if (o.id == osd_id) {
      o.pid = pid;
    }
  }
}

std::optional<pid_t> restart_osd(ClusterInfo& cluster, int id, const Launch& how) {
  CephDaemon* osd = nullptr;
  for (auto& o : cluster.osds) {
    osd = o.id == id ? &o : osd;
  }
  if (osd == nullptr) {
    throw std::runtime_error("no osd." + std::to_string(id) + " in " + cluster.dir);
  }
  const pid_t old_pid = osd->pid;
  const auto old_instance = osd_map_entry(cluster, id);
  if (!old_instance) {
    return std::nullopt;
  }
  kill(old_pid, SIGTERM);
  if (!poll_until([&] { return !alive(old_pid); }, 30s)) {
    kill(old_pid, SIGKILL);
    poll_until([&] { return !alive(old_pid); }, 10s);
  }
  const pid_t pid = start_like(how, cluster.dir + "/log/" + osd->name + ".stdout");
  record_pid(cluster, id, pid);  // first: cluster.sh down must find it whatever follows
  const auto back = poll_until(
      [&] {
        const auto e = osd_map_entry(cluster, id);
        return alive(pid) && e && e->up && e->up_from > old_instance->up_from && osds_up(cluster) &&
               pgs_clean(cluster);
      },
      180s, 500ms);
  return back ? std::optional<pid_t>(pid) : std::nullopt;
}

std::string set_dispatch_delay(const ClusterInfo& cluster, int id, double seconds) {
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"osd_debug_inject_dispatch_delay_duration", std::to_string(seconds > 0 ? seconds : 0.1)},
      {"osd_debug_inject_dispatch_delay_probability", seconds > 0 ? "1" : "0"}};
  for (const auto& [key, value] : settings) {
    const auto set = run_command(tool_argv(
        cluster, "ceph", {"tell", "osd." + std::to_string(id), "config", "set", key, value}));
    if (!set.ok()) {
      return "ceph tell osd." + std::to_string(id) + " config set " + key + ": " + set.out +
             set.err;
    }
  }
  return "";
}

}  // namespace cephscope::test
