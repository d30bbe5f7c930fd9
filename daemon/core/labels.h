// Metric labels. In core because discovery names its targets with them before any metric
// exists, and collectors and metrics write them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cephscope {

// Label pairs in the order they are written.
using Labels = std::vector<std::pair<std::string, std::string>>;

inline Labels operator+(Labels a, const Labels& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace cephscope
