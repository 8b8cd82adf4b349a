// Golden CFG dumps: every tests/cfg/golden/<name>.py is built and its dump compared with
// <name>.cfg. EGCA_REGEN_GOLDEN=1 rewrites the expected files (review every diff by hand:
// the dumps must be right, not just stable).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "egca/cfg/cfg.h"
#include "egca/core/files.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> GoldenInputs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(EGCA_SOURCE_DIR) / "tests/cfg/golden")) {
    if (e.path().extension() == ".py") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CfgGolden, AllConstructsMatchReviewedDumps) {
  std::vector<fs::path> inputs = GoldenInputs();
  ASSERT_GE(inputs.size(), 20u);
  const bool regen = std::getenv("EGCA_REGEN_GOLDEN") != nullptr;
  for (const fs::path& py : inputs) {
    SCOPED_TRACE(py.filename().string());
    egca::StatusOr<std::string> src = egca::ReadSourceFile(py.string());
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    egca::StatusOr<egca::cfg::ProgramCfg> cfg = egca::cfg::ProgramCfg::Build(*src);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    std::string dump = cfg->Dump();
    fs::path expected_path = py;
    expected_path.replace_extension(".cfg");
    if (regen) {
      ASSERT_TRUE(egca::WriteFileAtomic(expected_path.string(), dump).ok());
      continue;
    }
    egca::StatusOr<std::string> expected = egca::ReadFile(expected_path.string());
    ASSERT_TRUE(expected.ok()) << expected.status().ToString()
                               << " (run with EGCA_REGEN_GOLDEN=1 and review)";
    EXPECT_EQ(dump, *expected);
  }
}

}  // namespace
