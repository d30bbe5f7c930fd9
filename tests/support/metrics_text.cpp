#include "support/metrics_text.h"

#include <limits>
#include <sstream>
#include <stdexcept>

namespace cephscope::test {
namespace {

double parse_value(const std::string& v) {
  if (v == "+Inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (v == "-Inf") {
    return -std::numeric_limits<double>::infinity();
  }
  return std::stod(v);
}

}  // namespace

Metrics Metrics::parse(const std::string& text) {
  Metrics m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) {
      throw std::runtime_error("bad metrics line: " + line);
    }
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;  // past ="
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') {
          ++i;
        }
      }
      ++i;  // past }
    }
    std::istringstream rest(line.substr(i));
    std::string value;
    rest >> value;
    s.value = parse_value(value);
    m.samples_.push_back(std::move(s));
  }
  return m;
}

std::vector<Sample> Metrics::find(const std::string& name,
                                  const std::map<std::string, std::string>& match) const {
  std::vector<Sample> out;
  for (const auto& s : samples_) {
    if (s.name != name) {
      continue;
    }
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        ok = false;
        break;
      }
    }
    if (ok) {
      out.push_back(s);
    }
  }
  return out;
}

double Metrics::sum(const std::string& name,
                    const std::map<std::string, std::string>& match) const {
  double total = 0;
  for (const auto& s : find(name, match)) {
    total += s.value;
  }
  return total;
}

bool Metrics::any_with_label(const std::string& label, const std::string& value) const {
  for (const auto& s : samples_) {
    auto it = s.labels.find(label);
    if (it != s.labels.end() && it->second == value) {
      return true;
    }
  }
  return false;
}

}  // namespace cephscope::test
