// Problem loaders: every supported data set into ProblemRecords (tests, references, entry
// point), behind one entry point, LoadProblems().
//
// Formats and the ids they produce (ids are what samples are matched on):
//   humaneval        HumanEval .jsonl(.gz)                      "HumanEval/0"  (task_id as is)
//   mbpp             mbpp.jsonl (text, code, test_list, ...)     "mbpp/11"
//   mbpp_sanitized   sanitized-mbpp.json (a JSON array)          "mbpp/11"
//   mbpp_et          MBPP_ET.jsonl(.gz) (~100 tests per problem) "mbpp/11"
//   apps_dir         APPS folders <dir>/<id>/{question.txt, ...} "apps/<folder number>" ("0001" ->
//                    "apps/1", as codeparrot and MapCoder number the same problem)
//   codeparrot_apps  codeparrot/apps JSONL export                "apps/<problem_id>" ("apps/3554")
//   mapcoder_apps    MapCoder/TeamCoder APPS JSONL               "apps/<id>"         ("apps/3554")
//   apps_plus        APPS+ (StepCoder) by field mapping          "apps_plus/<id>"
//   humaneval_cpp    HumanEval-X C++ (task_id, declaration, ...) "CPP/0"        (task_id as is)
//   mbxp_cpp         MBXP C++ (task_id "MBCPP/n", language cpp)  "MBCPP/1"      (task_id as is)
//   mdeval_cpp       MDEVAL C++ bugs (buggy_code, fragment_lines) "mdeval/CPP/1" (the fixed
//                    program is the reference; LoadMdevalBugs() gives the buggy programs)
// C++ problems have language "cpp" and one kAssert test whose test_code is the data set's
// `main` (asserts, or MBXP's `throw` on a failed case); references are complete programs
// without that main (HumanEval-X: declaration + canonical solution; MBXP: prompt +
// canonical solution; MBXP problems without a solution have none).
// `DatasetOptions::id_prefix` replaces the "mbpp/", "apps/", "apps_plus/" prefixes (e.g. to
// keep APPS train and test problems, whose numbers overlap, apart in one run).
//
// Bad records (unparsable JSON line, missing or ill-typed field, a problem with no tests,
// non-UTF-8 text, a duplicate id) go to the LoadReport with file and line and are skipped;
// only an unreadable path or an undetectable format is a Status error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egca/datasets/problem.h"
#include "egca/core/status.h"

namespace egca::datasets {

enum class DatasetFormat {
  kAuto,
  kHumanEval,
  kMbpp,
  kMbppSanitized,
  kMbppEt,
  kAppsDir,
  kCodeparrotApps,
  kMapCoderApps,
  kAppsPlus,
  kHumanEvalCpp,
  kMbxpCpp,
  kMdevalCpp,
};

// "auto", "humaneval", "mbpp", "mbpp_sanitized", "mbpp_et", "apps_dir", "codeparrot_apps",
// "mapcoder_apps", "apps_plus" (the names the CLI's --format takes).
const char* DatasetFormatName(DatasetFormat format);
// Inverse of DatasetFormatName; INVALID_ARGUMENT naming the accepted names otherwise.
StatusOr<DatasetFormat> ParseDatasetFormat(std::string_view name);
// Every name, in enum order (for --help).
std::vector<std::string> DatasetFormatNames();

// APPS+ has no published file: its records are read by field name. Each field is a key or a
// dotted path ("input_output.inputs"); a string met on the way that holds a JSON object or
// array is decoded (codeparrot stores input_output and solutions as JSON strings), so the
// codeparrot export itself can be read as apps_plus. Empty name: the field is absent.
struct AppsPlusFields {
  std::string id = "problem_id";
  std::string description = "question";     // becomes ProblemRecord::prompt
  std::string solution = "solutions";       // a string or an array of strings (references)
  std::string fn_name = "fn_name";          // non-empty: call-based, else stdin/stdout
  std::string inputs = "inputs";            // array: argument lists (call) or stdin strings
  std::string outputs = "outputs";          // array, parallel to inputs
  std::string starter_code = "starter_code";
  std::string difficulty = "difficulty";
};

// Applies one "key=name" assignment (the CLI's --field), key one of id, description,
// solution, fn_name, inputs, outputs, starter_code, difficulty. INVALID_ARGUMENT names the
// assignment otherwise.
Status SetAppsPlusField(AppsPlusFields* fields, std::string_view assignment);

// How MapCoder/TeamCoder APPS problems with a starter (call-based in APPS) are tested.
// The files encode each call's arguments as str(arg) joined by '\n' and MapCoder graded
// them as stdin/stdout programs (its prompt asks the model to read input() and print the
// function's result), so its samples are stdin programs.
enum class MapCoderCallTests {
  kStdio,  // stdin = the encoded input, expected stdout = Python str() of the value (default)
  kCall,   // call the starter's function; each input line is a Python literal (a line that
           // is not a literal is a string); a test whose line count differs from the
           // function's parameter count makes the record bad
};

struct DatasetOptions {
  DatasetFormat format = DatasetFormat::kAuto;
  // Replaces the format's id prefix ("mbpp/", "apps/", "apps_plus/"); empty: the default.
  std::string id_prefix;
  // MBPP (plain): also run `challenge_test_list` asserts.
  bool mbpp_challenge_tests = false;
  MapCoderCallTests mapcoder_call_tests = MapCoderCallTests::kStdio;
  AppsPlusFields apps_plus;
  // Keep at most this many problems (in file order; bad records do not count); -1: all.
  int64_t limit = -1;
};

// The format of `path` by its content: a directory of APPS problem folders; otherwise the
// file (".gz" read transparently) as a JSON array or JSONL, by the keys of its first record
// that parses. NOT_FOUND for an unreadable path; INVALID_ARGUMENT naming the file and the
// keys seen when no format fits.
StatusOr<DatasetFormat> DetectDatasetFormat(const std::string& path,
                                            const DatasetOptions& options = {});

// Loads every good problem of `path` in file order (APPS folders: sorted by name). `report`
// (required, not owned) receives records read, problems kept and every bad record.
// ProblemRecord::origin is "<path>:<line>" (JSONL), "<path>[<index>]" (JSON array, 0-based
// element; its bad records have line 0 and name the element) or "<path>/<folder>" (APPS).
StatusOr<std::vector<ProblemRecord>> LoadProblems(const std::string& path,
                                                  const DatasetOptions& options,
                                                  LoadReport* report);

// One MDEVAL bug: the problem (fixed program as reference, the test main), the buggy
// program, and the lines the bug is on (1-based lines of buggy_code).
struct BugRecord {
  ProblemRecord problem;
  std::string buggy_code;
  std::vector<int32_t> buggy_lines;  // MDEVAL fragment_lines
  std::string category;              // "Syntax", "Logic", "Reference", "Multiple", ...
  std::string subtype;               // "illegal_comment", "condition_error", ...
};

// Reads an MDEVAL bug file (mdeval_bug_<LANG>.jsonl). Bad records go to `report` with file
// and line. NOT_FOUND for an unreadable path.
StatusOr<std::vector<BugRecord>> LoadMdevalBugs(const std::string& path, LoadReport* report);

// The function an MBPP-style reference defines that the assert lines call (the first
// top-level `def` of `reference` whose name is called in `asserts`); "" if none is.
std::string EntryPointFromAsserts(const std::string& reference,
                                  const std::vector<std::string>& asserts);

}  // namespace egca::datasets
