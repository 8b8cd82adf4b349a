// Every real program under the shared data directory, for robustness and calibration runs
// of cfg/: CodeT samples (prompt + completion), HumanEval canonical solutions, and the
// programs inside the MapCoder / LDB / Reflexion tarballs (extracted to a temp dir).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "egca/core/status.h"

namespace egca::cfg::corpus {

struct Program {
  std::string origin;   // "<file>:<line>:<field>[i]"
  std::string dataset;  // "codet", "humaneval", "mapcoder", "ldb", "reflexion"
  std::string text;
  bool completion = false;  // raw LLM output: run ExtractProgram first
};

struct Options {
  std::string data_dir;
  int64_t max_codet = -1;  // CodeT samples to take (-1: all 16,400)
  bool tarballs = true;    // MapCoder, LDB, Reflexion
};

struct Stats {
  int64_t files = 0;
  int64_t records = 0;
  int64_t bad_records = 0;  // reported and skipped
  std::vector<std::string> bad_record_messages;
};

// Calls `visit` for every program. A malformed record is counted, its file and line kept
// in stats, and skipped. Errors: a data file that cannot be read, tar failing.
Status ForEachProgram(const Options& options, const std::function<void(const Program&)>& visit,
                      Stats* stats);

// Extracts a .tar.gz into a fresh temp directory (removed by the destructor).
class TempExtract {
 public:
  static StatusOr<std::string> Into(const std::string& tarball, TempExtract* holder);
  ~TempExtract();
  TempExtract() = default;
  TempExtract(const TempExtract&) = delete;
  TempExtract& operator=(const TempExtract&) = delete;

 private:
  std::string dir_;
};

}  // namespace egca::cfg::corpus
