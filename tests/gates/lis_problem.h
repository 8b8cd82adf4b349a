// The EGCA case study as a router problem: the correct LIS program as reference, three
// call tests of which the buggy program (`>=` for `>`) fails the second ([1, 3, 3, 5]).
#pragma once

#include "common/lis_case.h"
#include "egca/gates/router.h"

namespace egca::testing {

inline gates::Problem LisProblem() {
  gates::Problem p;
  p.reference = LisProgram("lis_correct.py");
  const char* f = "longest_increasing_subsequence";
  p.tests = {tracer::TestCase::Call(f, "[[10, 9, 2, 5, 3, 7, 101, 18]]", "4"),
             tracer::TestCase::Call(f, "[[1, 3, 3, 5]]", "3"),
             tracer::TestCase::Call(f, "[[]]", "0")};
  return p;
}

}  // namespace egca::testing
