// Golden traces: every tests/tracer/golden/<name>.py (stdin from <name>.stdin if present)
// is run in-process under the C-level tracer and its DumpTrace() compared with the
// reviewed <name>.trace. EGCA_UPDATE_GOLDEN=1 rewrites the expected files instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "egca/tracer/trace_dump.h"
#include "trace_test_util.h"

namespace egca::tracer {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(EGCA_SOURCE_DIR) / "tests/tracer/golden";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> GoldenNames() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    if (entry.path().extension() == ".py") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string GoldenDump(const std::string& name) {
  std::string source = Slurp(kGoldenDir / (name + ".py"));
  fs::path stdin_path = kGoldenDir / (name + ".stdin");
  std::string input = fs::exists(stdin_path) ? Slurp(stdin_path) : "";
  testing::TracedRun run = testing::RunTraced(source, input, TraceOptions());
  std::string dump = DumpTrace(run.trace);
  dump += "uncaught: " + (run.error.empty() ? std::string("none") : run.error) + "\n";
  dump += "stdout:\n" + run.stdout_text;
  return dump;
}

class TraceGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TraceGolden, MatchesReviewedDump) {
  const std::string name = GetParam();
  std::string actual = GoldenDump(name);
  fs::path expected_path = kGoldenDir / (name + ".trace");
  const char* update = std::getenv("EGCA_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << expected_path;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << "missing " << expected_path
                                         << " (run with EGCA_UPDATE_GOLDEN=1 and review it)";
  EXPECT_EQ(Slurp(expected_path), actual) << "golden trace differs for " << name;
}

TEST_P(TraceGolden, DeterministicAcrossRuns) {
  EXPECT_EQ(GoldenDump(GetParam()), GoldenDump(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Programs, TraceGolden, ::testing::ValuesIn(GoldenNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace egca::tracer
