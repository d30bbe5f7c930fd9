#include "collectors/exemplars.h"

namespace cephscope {

std::optional<Exemplar> exemplar_of(const SlowOp& op, std::string_view stage) {
  if (op.trace_id.empty()) {
    return std::nullopt;  // nothing to point at
  }
  const double end = static_cast<double>(op.time_ns) / 1e9;
  if (stage.empty()) {
    return Exemplar{op.trace_id, op.seconds, end};
  }
  for (const auto& [name, seconds] : op.stages) {
    if (name == stage) {
      return Exemplar{op.trace_id, seconds, end};
    }
  }
  return std::nullopt;
}

}  // namespace cephscope
