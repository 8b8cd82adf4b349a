#include "egca/datasets/problem.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace egca::datasets {

std::string BadRecord::ToString() const {
  return line > 0 ? fmt::format("{}:{}: {}", file, line, message)
                  : fmt::format("{}: {}", file, message);
}

void LoadReport::Bad(std::string file, int64_t line, std::string message) {
  bad.push_back({std::move(file), line, std::move(message)});
}

namespace {

std::string Folded(std::string_view id) {
  std::string out;
  for (char c : id) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (l == '_' || l == '-') ? '/' : l;
  }
  return out;
}

// Levenshtein distance, bounded: stops counting past `limit` (returns limit + 1).
size_t EditDistance(std::string_view a, std::string_view b, size_t limit) {
  if (a.size() > b.size() + limit || b.size() > a.size() + limit) return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

}  // namespace

std::string NearestProblemId(std::string_view id, const std::vector<std::string>& known) {
  const std::string folded = Folded(id);
  // The same id up to case and separators ("MBPP/2", "mbpp_2", "humaneval/0") first.
  for (const std::string& k : known) {
    if (Folded(k) == folded) return k;
  }
  const size_t limit = std::max<size_t>(2, folded.size() / 4);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& k : known) {
    size_t d = EditDistance(folded, Folded(k), limit);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best;
}

}  // namespace egca::datasets
