// BpfCollector::load_first_hook with real BPF objects (tests/kernel/hook_choice.bpf.c): a
// flavour that loads and is refused at attach gives way under `auto`, comes back when no
// other flavour loads, and stays when forced.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/bpf_collector.h"
#include "hook_choice.skel.h"

using namespace cephscope;

namespace {

using ChoiceSkel = Skeleton<hook_choice_bpf, hook_choice_bpf__destroy>;

// What a test flavour's load does: attach both programs (one is refused), the good one only,
// or fail before anything is loaded.
enum class Flavour { kPartial, kWhole, kBroken };

class ChoiceCollector final : public BpfCollector {
 public:
  [[nodiscard]] const char* name() const override { return "hook_choice"; }
  Status collect(MetricSink& /*out*/, const TargetLabelMap& /*targets*/) override {
    return ok_status();
  }

  Cause choose(const std::string& wanted, std::initializer_list<HookOption> options,
               const std::map<std::string, Flavour>& flavours) {
    return load_first_hook(wanted, options,
                           [&](const char* hook) { return load(hook, flavours.at(hook)); });
  }
  // The getppid(2) calls of this process that the kept object counted.
  [[nodiscard]] unsigned long long calls() const {
    return *skel_ != nullptr ? __atomic_load_n(&(*skel_)->bss->calls, __ATOMIC_RELAXED) : 0;
  }
  std::vector<std::string> loads;  // the hooks load() ran, in order

 private:
  Status load(const char* hook, Flavour flavour) {
    loads.emplace_back(hook);
    if (flavour == Flavour::kBroken) {
      return error_with(Reason::kLoadFailed, ErrorKind::kSystem,
                        std::string(hook) + ": BPF load failed (the test's)");
    }
    ChoiceSkel skel(hook_choice_bpf__open());
    REQUIRE(skel);
    skel->rodata->target_tgid = static_cast<__u32>(getpid());
    bpf_program__set_autoload(skel->progs.refused, flavour == Flavour::kPartial);
    REQUIRE(hook_choice_bpf__load(skel.get()) == 0);
    hook_choice_bpf* raw = skel.release();
    // The destroy function runs from ~BpfCollector, when this object is no longer a
    // ChoiceCollector: it reaches the kept pointer through its own share of it.
    adopt(
        raw->obj,
        [kept = skel_, raw] {
          *kept = nullptr;
          hook_choice_bpf__destroy(raw);
        },
        hook);
    *skel_ = raw;
    attach(raw->progs.attaches, "attaches");
    if (flavour == Flavour::kPartial) {
      attach(raw->progs.refused, "refused");
    }
    return ok_status();
  }
  std::shared_ptr<hook_choice_bpf*> skel_ = std::make_shared<hook_choice_bpf*>(nullptr);
};

const Feature kThere{true, {}};

// How many programs named NAME the kernel holds now, any process's.
int loaded_programs(const std::string& name) {
  int n = 0;
  __u32 id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) {
      continue;
    }
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && name == info.name) {
      ++n;
    }
    close(fd);
  }
  return n;
}

// The probes by name: attached or not.
std::map<std::string, bool> attached(const ChoiceCollector& c) {
  std::map<std::string, bool> out;
  for (const auto& p : c.probes()) {
    out[p.probe] = p.attached;
  }
  return out;
}

}  // namespace

TEST_CASE("a flavour refused at attach gives way under auto, and comes back as the best there is",
          "[kernel][hooks]") {
  const int refused_before = loaded_programs("refused");
  const std::map<std::string, Flavour> flavours{
      {"partial", Flavour::kPartial}, {"whole", Flavour::kWhole}, {"broken", Flavour::kBroken}};
  auto fire = [] {
    for (int i = 0; i < 3; ++i) {
      (void)getppid();
    }
  };

  SECTION("auto: the next flavour, whole, and nothing left of the first") {
    ChoiceCollector c;
    const Cause why = c.choose("auto", {{"partial", kThere}, {"whole", kThere}}, flavours);
    CHECK(why.ok());
    CHECK(c.loads == std::vector<std::string>{"partial", "whole"});
    CHECK(c.hook() == "whole");
    CHECK(attached(c) == std::map<std::string, bool>{{"attaches", true}});
    CHECK(loaded_programs("refused") == refused_before);
    fire();
    CHECK(c.calls() == 3);
  }
  SECTION("auto: the partial flavour back when the next one does not load") {
    ChoiceCollector c;
    const Cause why = c.choose("auto", {{"partial", kThere}, {"broken", kThere}}, flavours);
    CHECK(why.ok());
    CHECK(c.loads == std::vector<std::string>{"partial", "broken", "partial"});
    CHECK(c.hook() == "partial");
    CHECK(attached(c) == std::map<std::string, bool>{{"attaches", true}, {"refused", false}});
    CHECK(loaded_programs("refused") == refused_before + 1);  // the second load's only
    fire();
    CHECK(c.calls() == 3);
  }
  SECTION("auto: the partial flavour back when the next one's kernel feature is missing") {
    ChoiceCollector c;
    const Feature missing{false, {Reason::kKernelFeatureMissing, "not here"}};
    const Cause why = c.choose("auto", {{"partial", kThere}, {"whole", missing}}, flavours);
    CHECK(why.ok());
    CHECK(c.loads == std::vector<std::string>{"partial", "partial"});
    CHECK(c.hook() == "partial");
  }
  SECTION("forced: the flavour stays with what attached") {
    ChoiceCollector c;
    const Cause why = c.choose("partial", {{"partial", kThere}, {"whole", kThere}}, flavours);
    CHECK(why.ok());
    CHECK(c.loads == std::vector<std::string>{"partial"});
    CHECK(c.hook() == "partial");
    const auto probes = c.probes();
    REQUIRE(probes.size() == 2);
    CHECK(probes[1].probe == "refused");
    CHECK_FALSE(probes[1].attached);
    CHECK(probes[1].why.reason != Reason::kOk);
  }
  SECTION("nothing loads: the first tried flavour's reason, every detail") {
    ChoiceCollector c;
    const Cause why = c.choose("auto", {{"broken", kThere}, {"broken", kThere}}, flavours);
    CHECK(why.reason == Reason::kLoadFailed);
    CHECK(why.detail ==
          "broken: BPF load failed (the test's); broken: BPF load failed (the "
          "test's)");
    CHECK(c.hook() == "unavailable");
  }
}
