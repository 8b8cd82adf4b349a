// Private: the per-format problem loaders behind LoadProblems() and what they share.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets_text.h"
#include "egca/datasets/datasets.h"

namespace egca::datasets::internal {

// Collects the problems of one file: counts records, rejects bad ones (no tests, non-UTF-8
// text, duplicate id) into the report, stops at the limit.
class ProblemSink {
 public:
  ProblemSink(std::string path, const DatasetOptions& options, LoadReport* report)
      : path_(std::move(path)), options_(options), report_(report) {}

  const std::string& path() const { return path_; }
  const DatasetOptions& options() const { return options_; }
  bool Full() const;
  // One more source record seen.
  void Record() { ++report_->records; }
  void Bad(int64_t line, const std::string& message) { report_->Bad(path_, line, message); }
  // Keeps `problem` unless it is bad (then reported with `line`).
  void Add(ProblemRecord problem, int64_t line);
  std::vector<ProblemRecord> Take() { return std::move(problems_); }
  size_t count() const { return problems_.size(); }

 private:
  std::string path_;
  const DatasetOptions& options_;
  LoadReport* report_;
  IdSet ids_;
  std::vector<ProblemRecord> problems_;
};

// Calls `visit(record, line, origin)` for every record of a JSONL text or a JSON array
// (`line` 0 for array elements; `origin` "<path>:<line>" or "<path>[<i>]"); unparsable
// records are reported to `sink`. Returns an error only when an array document does not
// parse as a whole.
Status ForEachJsonRecord(std::string_view text, ProblemSink* sink,
                         const std::function<void(const json&, int64_t, const std::string&)>& visit);

// The id prefix of a format, or DatasetOptions::id_prefix when set.
std::string IdPrefix(const DatasetOptions& options, const char* default_prefix);

// Per-format loaders (text formats get the file's decompressed contents).
void LoadHumanEvalRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink);
// C++ data sets (datasets_cpp.cpp). LoadMdevalCppRecord also appends the bug to `bugs`
// when non-null.
void LoadHumanEvalCppRecord(const json& r, int64_t line, const std::string& origin,
                            ProblemSink* sink);
void LoadMbxpCppRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink);
void LoadMdevalCppRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink,
                         std::vector<BugRecord>* bugs);
void LoadMbppRecord(DatasetFormat format, const json& r, int64_t line, const std::string& origin,
                    ProblemSink* sink);
void LoadCodeparrotRecord(const json& r, int64_t line, const std::string& origin,
                          ProblemSink* sink);
void LoadMapCoderRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink);
void LoadAppsPlusRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink);
Status LoadAppsDir(const std::string& dir, ProblemSink* sink);

// True when `dir` holds APPS problem folders (a child with input_output.json or question.txt).
bool IsAppsDir(const std::string& dir);
// Resolves an APPS+ field path ("a.b"), decoding JSON strings met on the way (a copy);
// nullopt if absent or `path` is empty.
std::optional<json> ResolveField(const json& record, const std::string& path);

}  // namespace egca::datasets::internal
