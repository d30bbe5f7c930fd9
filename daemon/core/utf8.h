// UTF-8 as RFC 3629 and Unicode define it: the one validator of label values
// (core/label_value.cpp) and of the text profiles carry (profile/profile_json.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cephscope {

// The length of the well-formed UTF-8 sequence at the start of S (Unicode 15, table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF) with its code point in CP, or 0 when
// there is none. S is not empty.
inline std::size_t utf8_sequence_length(std::string_view s, char32_t& cp) {
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

}  // namespace cephscope
