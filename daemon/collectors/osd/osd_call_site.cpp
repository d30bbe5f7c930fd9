#include "collectors/osd/osd_call_site.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace cephscope::osd {
namespace {

constexpr uint8_t kCallRel32 = 0xe8;
constexpr uint8_t kMovImmEcx = 0xb9;
constexpr uint8_t kRexB = 0x41;    // before 0xb9: the move goes to r9d, not ecx
constexpr size_t kArgWindow = 24;  // the argument set-up sits right before the call

int32_t rel32_at(std::span<const uint8_t> code, size_t at) {
  int32_t v = 0;
  std::memcpy(&v, code.data() + at, sizeof(v));
  return v;
}

// The nearest `mov $imm32, %ecx` that ends before the call, within the argument set-up.
std::optional<uint32_t> ecx_before(std::span<const uint8_t> code, size_t call) {
  for (size_t back = 5; back <= kArgWindow && back <= call; ++back) {
    const size_t p = call - back;
    if (code[p] == kMovImmEcx && (p == 0 || code[p - 1] != kRexB)) {
      return static_cast<uint32_t>(rel32_at(code, p + 1));
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<CallSite> find_calls(std::span<const uint8_t> code, uint64_t vaddr,
                                 uint64_t file_offset, uint64_t callee) {
  std::vector<CallSite> out;
  for (size_t i = 0; i + 5 <= code.size(); ++i) {
    if (code[i] != kCallRel32) {
      continue;
    }
    const uint64_t next = vaddr + i + 5;
    if (next + static_cast<int64_t>(rel32_at(code, i + 1)) != callee) {
      continue;
    }
    out.push_back({vaddr + i, file_offset + i, ecx_before(code, i)});
  }
  return out;
}

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
