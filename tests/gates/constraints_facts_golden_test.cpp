// Golden fact dumps: every tests/fixtures/constraints/<name>.py (real programs) is analysed
// and ComputeFacts(...).Dump() compared with <name>.facts. EGCA_REGEN_GOLDEN=1 rewrites the
// expected files (review every diff by hand: the facts must be right, not just stable).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "egca/core/files.h"
#include "egca/gates/constraints.h"

namespace fs = std::filesystem;

namespace {

TEST(ConstraintFactsGolden, RealProgramsMatchReviewedDumps) {
  std::vector<fs::path> inputs;
  for (const auto& e :
       fs::directory_iterator(fs::path(EGCA_SOURCE_DIR) / "tests/fixtures/constraints"))
    if (e.path().extension() == ".py") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  ASSERT_GE(inputs.size(), 4u);
  const bool regen = std::getenv("EGCA_REGEN_GOLDEN") != nullptr;
  for (const fs::path& py : inputs) {
    SCOPED_TRACE(py.filename().string());
    auto src = egca::ReadSourceFile(py.string());
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    auto facts = egca::gates::ComputeFacts(*src);
    ASSERT_TRUE(facts.ok()) << facts.status().ToString();
    std::string dump = facts->Dump();
    fs::path expected_path = py;
    expected_path.replace_extension(".facts");
    if (regen) {
      ASSERT_TRUE(egca::WriteFileAtomic(expected_path.string(), dump).ok());
      continue;
    }
    auto expected = egca::ReadFile(expected_path.string());
    ASSERT_TRUE(expected.ok()) << expected.status().ToString()
                               << " (run with EGCA_REGEN_GOLDEN=1 and review)";
    EXPECT_EQ(dump, *expected);
  }
}

}  // namespace
