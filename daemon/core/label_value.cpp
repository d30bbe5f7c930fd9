#include "core/label_value.h"

#include <algorithm>
#include <cstdint>

namespace cephscope {
namespace {

bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view s, char32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(s[i]); };
  const std::uint8_t b0 = byte(0);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t n = 0;
  std::uint8_t lo = 0x80;
  std::uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0Fu;
    lo = b0 == 0xE0 ? 0xA0 : 0x80;  // overlong
    hi = b0 == 0xED ? 0x9F : 0xBF;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07u;
    lo = b0 == 0xF0 ? 0x90 : 0x80;  // overlong
    hi = b0 == 0xF4 ? 0x8F : 0xBF;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) {
    return 0;
  }
  for (std::size_t i = 1; i < n; ++i) {
    const std::uint8_t b = byte(i);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
      return 0;
    }
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return n;
}

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
