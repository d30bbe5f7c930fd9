// libFuzzer entry: the YAML configuration from arbitrary text. It is accepted or refused with
// an error naming the key and line; yaml-cpp's exceptions must not escape, nor anything crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)cephscope::parse_config(text, "fuzz.yaml").ok();
  (void)cephscope::parse_duration(text);
  return 0;
}
