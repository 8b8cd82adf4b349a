#include "egca/datasets/problem.h"

#include <fmt/format.h>

namespace egca::datasets {

std::string BadRecord::ToString() const {
  return line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                  : fmt::format("{}: {}", file, message);
}

void LoadReport::Bad(std::string file, int64_t line, std::string message) {
  bad.push_back({std::move(file), line, std::move(message)});
}

}  // namespace egca::datasets
