#include "collectors/osd/osd_call_site.h"

#include <algorithm>
#include <optional>
#include <string>

namespace cephscope::osd {

using profile::CallSite;

Result<CallSite> third_state_call(const std::vector<CallSite>& calls) {
  std::optional<uint32_t> first;
  for (const auto& c : calls) {
    if (c.ecx && (!first || *c.ecx < *first)) {
      first = c.ecx;
    }
  }
  if (!first) {
    return make_error(ErrorKind::kNotFound,
                      std::to_string(calls.size()) + " calls, none with a constant state id");
  }
  auto with = [&](uint32_t id) {
    return std::count_if(calls.begin(), calls.end(),
                         [&](const CallSite& c) { return c.ecx == id; });
  };
  if (with(*first + 1) == 0 || with(*first + 2) != 1) {
    return make_error(ErrorKind::kNotFound,
                      "no single call with state id " + std::to_string(*first + 2) + " after ids " +
                          std::to_string(*first) + " and " + std::to_string(*first + 1) + " (" +
                          std::to_string(calls.size()) + " calls)");
  }
  return *std::find_if(calls.begin(), calls.end(),
                       [&](const CallSite& c) { return c.ecx == *first + 2; });
}

}  // namespace cephscope::osd
