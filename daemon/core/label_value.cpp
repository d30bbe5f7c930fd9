#include "core/label_value.h"

#include <algorithm>
#include <cstdint>

namespace cephscope {
namespace {

bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

}  // namespace

std::string label_value(std::string_view raw) {
  // The usual value, printable ASCII within the bound, is kept as it is: it is asked for on
  // every series of every scrape.
  const auto printable_ascii = [](char c) { return c >= 0x20 && c < 0x7F; };
  if (raw.size() <= kMaxLabelValueBytes && std::all_of(raw.begin(), raw.end(), printable_ascii)) {
    return std::string(raw);
  }
  std::string out;
  out.reserve(raw.size() < kMaxLabelValueBytes ? raw.size() : kMaxLabelValueBytes);
  while (!raw.empty()) {
    char32_t cp = 0;
    std::size_t n = utf8_sequence_length(raw, cp);
    std::string_view piece = raw.substr(0, n);
    if (n == 0 || is_control(cp)) {
      piece = kUtf8Replacement;
      n = n == 0 ? 1 : n;
    }
    if (out.size() + piece.size() > kMaxLabelValueBytes) {
      break;
    }
    out += piece;
    raw.remove_prefix(n);
  }
  return out;
}

}  // namespace cephscope
