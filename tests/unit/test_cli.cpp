// The binary's own handling of bad input: exit status 2 and one message naming the key.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/daemon_runner.h"

using namespace cephscope::test;

TEST_CASE("a bad config file stops the daemon with status 2 and names the key and line", "[cli]") {
  const std::string dir = test_dir("/tmp");
  const std::string config = dir + "/bad.yaml";
  std::ofstream(config) << "log_level: info\ncollectors:\n  vfs: {hook: magic}\n";
  std::string out;
  CHECK(run_command(daemon_binary() + " --config " + config, &out) == 2);
  CHECK(out ==
        "cephscope: " + config +
            ":3: collectors.vfs.hook: unknown hook 'magic' (one of: auto, fentry, kprobe)\n");
  CHECK(run_command(daemon_binary() + " --check --config " + config, &out) == 2);
  CHECK(run_command(daemon_binary() + " --config " + dir + "/missing.yaml", &out) == 2);
  CHECK(out.find("cannot read the config file") != std::string::npos);
  CHECK(run_command(daemon_binary() + " --no-such-flag", &out) != 0);
  std::filesystem::remove_all(dir);
}
