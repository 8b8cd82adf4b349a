// The EGCA case-study programs (longest increasing subsequence, tests/tracer/golden/lis_*.py)
// without their driver line, as candidates and references for router and divergence tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "egca/core/files.h"

namespace egca::testing {

inline std::string LisProgram(const std::string& name) {
  auto src = ReadFile(std::string(EGCA_SOURCE_DIR) + "/tests/tracer/golden/" + name);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  if (!src.ok()) return "";
  return src->substr(0, src->find("\n\nresult = ")) + "\n";
}

}  // namespace egca::testing
