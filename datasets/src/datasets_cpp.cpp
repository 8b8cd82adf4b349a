// C++ data sets: HumanEval-X C++, MBXP C++ and MDEVAL C++ bugs. Every problem has one
// kAssert test whose test_code is the data set's `main`; egca::cpp compiles candidate and
// test together and runs it.
#include <fmt/format.h>

#include "datasets_formats.h"
#include "egca/core/files.h"

namespace egca::datasets {
namespace internal {
namespace {

// A string field that may be JSON null (MBXP's canonical_solution for tasks without one).
bool GetNullableString(const json& r, const char* key, std::string* out, bool* present,
                       std::string* error) {
  *present = false;
  if (!r.contains(key) || r[key].is_null()) return true;
  if (!r[key].is_string()) {
    *error = fmt::format("field \"{}\" must be a string or null", key);
    return false;
  }
  *out = r[key].get<std::string>();
  *present = true;
  return true;
}

// The function a C++ declaration ends with: the identifier before its last '('.
std::string FunctionName(const std::string& declaration) {
  size_t paren = declaration.rfind('(');
  if (paren == std::string::npos) return "";
  size_t end = paren;
  while (end > 0 && (declaration[end - 1] == ' ' || declaration[end - 1] == '\t')) --end;
  size_t begin = end;
  while (begin > 0 && (std::isalnum(static_cast<unsigned char>(declaration[begin - 1])) ||
                       declaration[begin - 1] == '_')) {
    --begin;
  }
  return declaration.substr(begin, end - begin);
}

tracer::TestCase MainTest(const std::string& test) {
  tracer::TestCase t = tracer::TestCase::Asserts(test);
  t.name = "main";
  return t;
}

}  // namespace

void LoadHumanEvalCppRecord(const json& r, int64_t line, const std::string& origin,
                            ProblemSink* sink) {
  std::string error, declaration, solution, test;
  ProblemRecord p;
  if (!GetString(r, "task_id", &p.id, &error) || !GetString(r, "prompt", &p.prompt, &error) ||
      !GetString(r, "declaration", &declaration, &error) ||
      !GetString(r, "canonical_solution", &solution, &error) ||
      !GetString(r, "test", &test, &error)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  p.dataset = "humaneval_cpp";
  p.language = "cpp";
  p.entry_point = FunctionName(declaration);
  // HumanEval-X's runnable program is declaration + solution + test (the declaration
  // carries includes the prompt lacks). A few declarations (CPP/38) already hold part of
  // the body (more than the function's own '{' open): then prompt + solution, which the
  // prompt's signature line continues.
  int open = 0;
  for (char c : declaration) open += c == '{' ? 1 : c == '}' ? -1 : 0;
  p.references.push_back((open > 1 ? p.prompt : declaration) + solution);
  if (!test.empty()) p.tests.push_back(MainTest(test));
  p.origin = origin;
  sink->Add(std::move(p), line);
}

void LoadMbxpCppRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink) {
  std::string error, solution, test;
  bool has_solution = false;
  ProblemRecord p;
  if (!GetString(r, "task_id", &p.id, &error) || !GetString(r, "prompt", &p.prompt, &error) ||
      !GetString(r, "test", &test, &error) ||
      !GetString(r, "entry_point", &p.entry_point, &error, /*optional=*/true) ||
      !GetNullableString(r, "canonical_solution", &solution, &has_solution, &error)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  p.dataset = "mbxp_cpp";
  p.language = "cpp";
  if (has_solution) p.references.push_back(p.prompt + solution);
  if (!test.empty()) p.tests.push_back(MainTest(test));
  p.origin = origin;
  sink->Add(std::move(p), line);
}

void LoadMdevalCppRecord(const json& r, int64_t line, const std::string& origin, ProblemSink* sink,
                         std::vector<BugRecord>* bugs) {
  std::string error, id, fixed, buggy, test;
  BugRecord bug;
  if (!GetId(r, "question_id", &id, &error) ||
      !GetString(r, "canonical_solution", &fixed, &error) ||
      !GetString(r, "buggy_code", &buggy, &error) || !GetString(r, "test", &test, &error) ||
      !GetString(r, "category", &bug.category, &error, true) ||
      !GetString(r, "subtype", &bug.subtype, &error, true)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  if (!r.contains("fragment_lines") || !r["fragment_lines"].is_array()) {
    sink->Bad(line, "field \"fragment_lines\" must be an array of line numbers, skipped");
    return;
  }
  for (const json& l : r["fragment_lines"]) {
    if (!l.is_number_integer()) {
      sink->Bad(line, "field \"fragment_lines\" must be an array of line numbers, skipped");
      return;
    }
    bug.buggy_lines.push_back(l.get<int32_t>());
  }
  ProblemRecord p;
  p.id = IdPrefix(sink->options(), "mdeval/") + id;
  p.dataset = "mdeval_cpp";
  p.language = "cpp";
  GetString(r, "docstring", &p.prompt, &error, true);
  p.references.push_back(fixed);
  if (!test.empty()) p.tests.push_back(MainTest(test));
  p.origin = origin;
  bug.problem = p;
  bug.buggy_code = std::move(buggy);
  const size_t before = sink->count();
  sink->Add(std::move(p), line);
  if (bugs != nullptr && sink->count() > before) bugs->push_back(std::move(bug));
}

}  // namespace internal

StatusOr<std::vector<BugRecord>> LoadMdevalBugs(const std::string& path, LoadReport* report) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  DatasetOptions options;
  options.format = DatasetFormat::kMdevalCpp;
  internal::ProblemSink sink(path, options, report);
  std::vector<BugRecord> bugs;
  EGCA_RETURN_IF_ERROR(internal::ForEachJsonRecord(
      text, &sink, [&](const internal::json& r, int64_t line, const std::string& origin) {
        internal::LoadMdevalCppRecord(r, line, origin, &sink, &bugs);
      }));
  return bugs;
}

}  // namespace egca::datasets
