// libFuzzer entry: profile and probe-set JSON from arbitrary bytes. Either is rejected with an
// error, or it is accepted and then survives a round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "profile/probe_set.h"
#include "profile/profile_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cephscope::profile;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = parse_profile(text);
  if (p.ok()) {
    const std::string once = dump_profile(*p);
    auto again = parse_profile(once);
    if (!again.ok() || dump_profile(*again) != once) {
      __builtin_trap();  // what we accept, we must write back readable and unchanged
    }
  }
  (void)parse_probe_set(text).ok();
  return 0;
}
