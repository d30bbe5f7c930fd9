#include "support/privileges.h"

#include <catch2/catch.hpp>
#include <fstream>

namespace cephscope::test {

namespace {

constexpr const char* kParanoidPath = "/proc/sys/kernel/perf_event_paranoid";

bool set_paranoid(int level) {
  std::ofstream out(kParanoidPath);
  out << level;
  out.flush();
  return out.good();
}

}  // namespace

ParanoidLevel::ParanoidLevel(int level) : old_(paranoid_level()) {
  REQUIRE(set_paranoid(level));
}

ParanoidLevel::~ParanoidLevel() {
  (void)set_paranoid(old_);
}

int paranoid_level() {
  int level = 2;
  std::ifstream(kParanoidPath) >> level;
  return level;
}

std::vector<std::string> as_nobody_argv(const std::string& caps, const std::string& memlock) {
  std::vector<std::string> argv;
  if (!memlock.empty()) {
    argv = {"/usr/bin/prlimit", "--memlock=" + memlock + ":" + memlock, "--"};
  }
  for (const char* arg : {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}) {
    argv.emplace_back(arg);
  }
  for (const char* set : {"--inh-caps=-all,", "--ambient-caps=-all,", "--bounding-set=-all,"}) {
    argv.push_back(set + caps);
  }
  return argv;
}

}  // namespace cephscope::test
