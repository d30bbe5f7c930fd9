// How every YAML loader of the daemon reads a document and reports its first error:
// SOURCE:LINE: KEY: WHAT, or SOURCE:LINE: not valid YAML: ...
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>
#include <string>

#include "core/result.h"

namespace cephscope::yaml {

// A loader's first problem, thrown from deep in a nested document and caught once, in
// parse_yaml_text().
struct Problem {
  int line;
  std::string key;
  std::string what;
};

inline int line_of(const YAML::Node& node) {
  return node.Mark().line + 1;
}

// KEY under PARENT, as problems name it: "discovery.scan_interval".
inline std::string join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

inline void require_map(const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) {
    throw Problem{line_of(node), key, "expected a mapping"};
  }
}

// Refuses a key this section does not know; one in UNSUPPORTED (a key of a related format that
// cephscope does not implement) is named as such, so that an operator learns what to drop.
inline void check_keys(const YAML::Node& node, const std::string& parent,
                       const std::set<std::string>& known,
                       const std::set<std::string>& unsupported = {}) {
  for (const auto& item : node) {
    const auto name = item.first.as<std::string>();
    if (unsupported.contains(name)) {
      throw Problem{line_of(item.first), join(parent, name), "not supported by cephscope"};
    }
    if (!known.contains(name)) {
      throw Problem{line_of(item.first), join(parent, name), "unknown key"};
    }
  }
}

inline std::string scalar(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) {
    throw Problem{line_of(node), key, "expected a string"};
  }
  return node.Scalar();
}

// Sets OUT to READ(value, "PARENT.NAME") when NODE has NAME; leaves the default otherwise.
template <typename T, typename Read>
void read_if(const YAML::Node& node, const std::string& parent, const std::string& name, T& out,
             const Read& read) {
  if (const auto& value = node[name]) {
    out = read(value, join(parent, name));
  }
}

// parse(YAML::Load(text)) as a Result: a thrown Problem or a YAML syntax error becomes one
// invalid-input error naming the source and line.
template <typename T, typename Parse>
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

}  // namespace cephscope::yaml
