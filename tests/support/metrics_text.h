// A reader of the Prometheus text format, for tests that check what /metrics says.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cephscope::test {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

class Metrics {
 public:
  static Metrics parse(const std::string& text);

  // Samples named `name` whose labels include every pair of `match`.
  [[nodiscard]] std::vector<Sample> find(
      const std::string& name, const std::map<std::string, std::string>& match = {}) const;
  // The sum of the values of those samples (0 when none).
  [[nodiscard]] double sum(const std::string& name,
                           const std::map<std::string, std::string>& match = {}) const;
  // Whether any sample of any name carries label=value.
  [[nodiscard]] bool any_with_label(const std::string& label, const std::string& value) const;
  [[nodiscard]] const std::vector<Sample>& samples() const { return samples_; }

 private:
  std::vector<Sample> samples_;
};

}  // namespace cephscope::test
