// A YAML file's first error as every loader of the daemon reports it: SOURCE:LINE: KEY: WHAT,
// or SOURCE:LINE: not valid YAML: ...
#pragma once

#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>

#include "core/result.h"

namespace cephscope {

// parse(YAML::Load(text)) as a Result: a thrown Problem ({line, key, what}: the loader's own
// check) or a YAML syntax error becomes one invalid-input error naming the source and line.
template <typename T, typename Problem, typename Parse>
Result<T> parse_yaml_text(const std::string& text, const std::string& source, Parse parse) {
  std::ostringstream msg;
  try {
    return parse(YAML::Load(text));
  } catch (const Problem& p) {
    msg << source << ":" << p.line << ": " << p.key << ": " << p.what;
  } catch (const YAML::Exception& e) {
    msg << source << ":" << e.mark.line + 1 << ": not valid YAML: " << e.msg;
  }
  return make_error(ErrorKind::kInvalidInput, msg.str());
}

}  // namespace cephscope
