// Label values from outside the daemon (process names, matcher names, device names, paths)
// made safe for the exposition format: every value that reaches /metrics goes through
// label_value(), so a process named with arbitrary bytes cannot break a scrape.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace cephscope {

// The longest label value written, in bytes.
inline constexpr std::size_t kMaxLabelValueBytes = 128;

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// RAW as a label value: valid UTF-8 (each byte of an invalid sequence becomes U+FFFD), no
// control characters (C0, DEL and C1 become U+FFFD), at most kMaxLabelValueBytes bytes (cut
// at a character boundary). Idempotent. Backslash, quote and newline are left to the text
// serialiser, which escapes them as the exposition format requires.
std::string label_value(std::string_view raw);

}  // namespace cephscope
