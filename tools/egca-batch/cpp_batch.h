// egca-batch cpp: grade and route C++ candidates (HumanEval-X, MBXP, MDEVAL, or any
// problems with language "cpp") with egca::cpp, and write per-candidate routes and a route
// distribution.
#pragma once

#include <string>

namespace egca_batch_cpp {

struct CppBatchArgs {
  std::string problems;          // problem file (humaneval_cpp / mbxp_cpp / mdeval_cpp)
  std::string format = "auto";
  std::string samples;           // sample file; empty with --references
  std::string samples_source = "jsonl";  // "jsonl" (egca sample JSONL) or a converter name
  bool references = false;       // route every problem's references (they must be CORRECT)
  bool mdeval_buggy = false;     // route MDEVAL's buggy programs (--problems is the bug file)
  std::string out;               // output directory: routes.jsonl, summary.json, summary.md
  bool localize = true;           // trace + align LOGIC candidates against the reference
  bool comparability = true;      // the I_cmp gate on Clang CFGs
  double threshold = -1;          // its threshold; < 0: C++'s (cpp::kCppComparabilityThreshold)
  int workers = 1;
  double timeout = 10;
  int64_t limit = -1;
  std::string title = "C++ routes";
};

// Runs it; returns the process exit code (2: bad input, one line on stderr naming it).
int RunCppBatch(const CppBatchArgs& args);

}  // namespace egca_batch_cpp
