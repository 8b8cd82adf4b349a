// The data-set objects of egca._egca: a loaded problem set (shared, immutable) and the
// samples routed against it.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"
#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"

namespace egca::python {

// Problems of one LoadProblems call. Immutable once built; shared by every Problem, Router
// and Route made from it.
struct ProblemSetData {
  std::string path;
  std::vector<datasets::ProblemRecord> problems;
  std::vector<datasets::BadRecord> bad;
  std::unordered_map<std::string, size_t> index;  // id -> position

  // The problem with `id`, or KeyError naming it with a did-you-mean hint.
  size_t Find(const std::string& id) const;
};

struct ProblemSet {
  std::shared_ptr<const ProblemSetData> data;
};

struct Problem {
  std::shared_ptr<const ProblemSetData> set;
  size_t index = 0;
  const datasets::ProblemRecord& record() const { return set->problems[index]; }
};

}  // namespace egca::python
