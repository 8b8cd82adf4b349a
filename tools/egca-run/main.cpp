// egca-run: run a Python or C++ program on tests inside egca's sandbox and print one verdict
// per test, a summary with the pass fraction R_hat, and (with --trace) the execution trace.
//
//   egca-run prog.py --fn add --input '[1, 2]' --expect 3 --input '[2, 2]' --expect 4
//   egca-run prog.py --stdin in.txt --expect-stdout out.txt
//   egca-run prog.py --tests humaneval_test.py --entry-point add      (HumanEval check)
//   egca-run prog.py --tests asserts.py [--setup setup.py]            (MBPP/QuixBugs asserts)
//   egca-run prog.py --tests cases.json   (JSON list of cases, or APPS input_output.json)
//   egca-run prog.cpp --tests main.cpp    (C++: a main that asserts, HumanEval-X/MBXP style)
//   egca-run prog.cpp --stdin in.txt --expect-stdout out.txt   (C++ with its own main)
//   --lang auto|python|cpp: auto reads the extension, else the content (egca/core/language.h).
//   C++ programs are compiled by clang++ and run in the same sandbox (egca::cpp); --trace
//   prints their per-statement snapshots.
//
// Exit status: 0 every test passed, 1 some test did not, 2 bad usage or unreadable input
// (or egca itself failed).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "egca/tools/cli.h"
#include "egca/tools/language.h"
#include "egca/core/files.h"
#include "egca/core/language.h"
#include "egca/cpp/executor.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_args.h"
#include "egca/tracer/test_case.h"
#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_dump.h"

namespace {

using egca::Status;
using egca::StatusOr;
using egca::sandbox::Verdict;
using egca::sandbox::VerdictKind;
using egca::tracer::ProgramResult;
using egca::tracer::TestCase;
using egca::tracer::TestKind;
using egca::tracer::TestResult;
using json = nlohmann::ordered_json;

constexpr int kExitAllPassed = 0;
constexpr int kExitSomeFailed = 1;
using egca::tools::kExitUsage;

struct Args {
  std::string program;
  std::string lang = "auto";
  egca::tracer::TestArgs tests;  // --fn/--input/--expect, --stdin/--expect-stdout, --tests
  bool apps = false;
  bool apps_allclose = false;
  bool json_output = false;
  bool trace = false;
  std::string trace_mode = "none";
  bool stop_on_failure = false;
  double timeout = 10;
  double memory_mib = 2048;
  uint64_t output_limit = 8ull << 20;
};

// One line, at most `width` bytes (UTF-8 safe cut), newlines shown as \n.
std::string OneLine(const std::string& text, size_t width) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  if (out.size() <= width) return out;
  size_t cut = width;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

std::string Detail(const TestCase& test, const Verdict& v) {
  switch (v.kind) {
    case VerdictKind::kOk:
      return test.kind == TestKind::kCall ? "-> " + v.actual : v.detail;
    case VerdictKind::kWrongAnswer:
      // A failing assert of a test's main (C++) says which, in detail, with no values.
      if (v.actual.empty() && v.expected.empty() && !v.detail.empty()) return v.detail;
      return fmt::format("got {}, expected {}", v.actual, v.expected);
    case VerdictKind::kSyntaxError:
    case VerdictKind::kRuntimeError: {
      std::string where = v.line > 0 ? fmt::format(" at {}:{}", v.line, v.column) : "";
      std::string text = v.error_type + (v.message.empty() ? "" : ": " + v.message) + where;
      if (!v.detail.empty()) text += " (" + v.detail + ")";
      return text;
    }
    default:
      return v.detail;
  }
}

// `trace`: the test's trace dump (nullptr: not traced).
json VerdictJson(const TestCase& test, const TestResult& r, const std::string* trace) {
  const Verdict& v = r.verdict;
  json j = {{"name", test.name},
            {"kind", egca::tracer::TestKindName(test.kind)},
            {"verdict", egca::sandbox::VerdictName(v.kind)},
            {"passed", v.passed()},
            {"error_type", v.error_type},
            {"message", v.message},
            {"line", v.line},
            {"column", v.column},
            {"end_line", v.end_line},
            {"end_column", v.end_column},
            {"signal", v.signal},
            {"detail", v.detail},
            {"actual", v.actual},
            {"expected", v.expected},
            {"wall_seconds", v.wall_seconds},
            {"cpu_seconds", v.cpu_seconds},
            {"max_rss_bytes", v.max_rss_bytes},
            {"stdout", r.stdout_data},
            {"stderr", r.stderr_data}};
  if (trace != nullptr) j["trace"] = *trace;
  return j;
}

// `traces`: one dump per run test when traced (empty: not traced).
void PrintTable(const std::vector<TestCase>& tests, const ProgramResult& result,
                const std::vector<std::string>& traces) {
  size_t name_width = 4;
  for (size_t i = 0; i < result.tests.size(); ++i) {
    name_width = std::max(name_width, std::min<size_t>(OneLine(tests[i].name, 40).size(), 40));
  }
  fmt::print("{:>3}  {:<6}  {:<{}}  {:<13}  {:>8}  {}\n", "#", "kind", "test", name_width,
             "verdict", "time", "detail");
  for (size_t i = 0; i < result.tests.size(); ++i) {
    const TestResult& r = result.tests[i];
    fmt::print("{:>3}  {:<6}  {:<{}}  {:<13}  {:>6.0f}ms  {}\n", i + 1,
               egca::tracer::TestKindName(tests[i].kind), OneLine(tests[i].name, 40), name_width,
               egca::sandbox::VerdictName(r.verdict.kind), r.verdict.wall_seconds * 1000,
               OneLine(Detail(tests[i], r.verdict), 100));
  }
  const int run = static_cast<int>(result.tests.size());
  fmt::print("\npassed {}/{}  R_hat = {:.3f}{}\n", result.passed, result.total,
             result.pass_fraction(),
             run < result.total ? fmt::format("  (stopped after test {})", run) : "");
  for (size_t i = 0; i < traces.size() && i < result.tests.size(); ++i) {
    fmt::print("\n--- trace of test {} ({}) ---\n", i + 1, OneLine(tests[i].name, 60));
    fmt::print("{}", traces[i]);
  }
}

// C++ runs: per-statement snapshots of each run test (egca::cpp::CppExecutor::RunTraced);
// the verdicts stay the untraced runs'.
egca::StatusOr<std::vector<std::string>> CppTraces(egca::cpp::CppExecutor& executor,
                                                   const std::string& source,
                                                   const std::vector<TestCase>& tests,
                                                   const ProgramResult& result,
                                                   const egca::tracer::RunOptions& options) {
  std::vector<std::string> out;
  for (size_t i = 0; i < result.tests.size(); ++i) {
    EGCA_ASSIGN_OR_RETURN(auto traced, executor.RunTraced(source, tests[i], options));
    std::string dump = egca::cpp::DumpTrace(traced.trace);
    if (!traced.note.empty()) dump += "(no snapshots: " + traced.note + ")\n";
    out.push_back(std::move(dump));
  }
  return out;
}

int Fail(const std::string& message) {
  fmt::print(stderr, "egca-run: {}\n", message);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Python candidates run in forks of egca-py-server, an exec'd program that never holds
  // this process's memory (tests, expected values); it still starts first.
  // A C++ program's tests carry no expected value on the command line (--expect is
  // Python-only), so its executor can start after parsing; the Python one starts now
  // unless argv already says C++.
  const std::optional<egca::Language> peeked = egca::tools::PeekLanguage(argc, argv);
  std::optional<StatusOr<std::unique_ptr<egca::tracer::Executor>>> executor;
  if (peeked != egca::Language::kCpp) executor = egca::tracer::Executor::Create({});
  CLI::App app{"Run a Python or C++ program on tests in egca's sandbox; one verdict per test."};
  Args a;
  app.add_option("program", a.program, "Python or C++ source file (UTF-8)")->required();
  app.add_option("--lang", a.lang, egca::tools::kLanguageHelp)
      ->check(CLI::IsMember({"auto", "python", "cpp"}));
  app.add_option("--fn", a.tests.function, "function to call (call-based tests; class Solution works)");
  // One value per occurrence; without allow_extra_args(false) CLI11 would split a
  // bracketed value like '[1, 2]' into several.
  app.add_option("--input", a.tests.inputs, "JSON array of arguments; repeat for more tests")
      ->allow_extra_args(false);
  app.add_option("--expect", a.tests.expects, "expected return value as JSON, one per --input")
      ->allow_extra_args(false);
  app.add_option("--stdin", a.tests.stdin_files, "file fed to stdin; repeat for more tests")
      ->allow_extra_args(false);
  app.add_option("--expect-stdout", a.tests.expect_stdout_files, "expected stdout, one per --stdin")
      ->allow_extra_args(false);
  app.add_option("--tests", a.tests.tests_file,
                 "tests: .json (list of cases or APPS input_output), HumanEval check, or asserts");
  app.add_option("--setup", a.tests.setup_file, "setup code run before assert tests (MBPP)");
  app.add_option("--entry-point", a.tests.entry_point, "function passed to check() (HumanEval)");
  app.add_flag("--apps", a.apps, "APPS conventions (standard import header, function wrapping)");
  app.add_flag("--apps-allclose", a.apps_allclose,
               "APPS's numeric leniency: integers too compare with the float tolerance "
               "(np.allclose), as APPS's checker; off: integers exactly");
  app.add_flag("--json", a.json_output, "print one JSON object instead of the table");
  app.add_flag("--trace", a.trace, "trace each run natively and print the trace dump");
  app.add_option("--trace-mode", a.trace_mode, "none | native | python_settrace")
      ->check(CLI::IsMember({"none", "native", "python_settrace"}));
  app.add_flag("--stop-on-failure", a.stop_on_failure, "stop after the first failing test");
  app.add_option("--timeout", a.timeout, "wall-clock and CPU seconds per test")
      ->check(CLI::PositiveNumber);
  app.add_option("--memory", a.memory_mib, "address-space limit per test, MiB")
      ->check(CLI::PositiveNumber);
  app.add_option("--output-limit", a.output_limit, "stdout+stderr bytes per test")
      ->check(CLI::PositiveNumber);
  if (auto exit_code = egca::tools::ParseArgs(app, argc, argv, "egca-run")) return *exit_code;

  StatusOr<std::string> source = egca::ReadSourceFile(a.program);
  if (!source.ok()) return Fail(source.status().ToString());
  const egca::Language lang = egca::tools::ResolveLanguage(a.lang, a.program, *source);
  std::optional<StatusOr<std::unique_ptr<egca::cpp::CppExecutor>>> cpp_executor;
  if (lang == egca::Language::kCpp) {
    if (a.apps) return Fail("--apps is Python-only");
    if (a.trace_mode == "python_settrace") return Fail("--trace-mode python_settrace is Python-only");
    // Started before the expected-output files are read.
    cpp_executor = egca::cpp::CppExecutor::Create({});
  } else if (!executor) {
    // argv named a C++ file but the program is Python (e.g. --lang python).
    executor = egca::tracer::Executor::Create({});
  }
  StatusOr<std::vector<TestCase>> tests = lang == egca::Language::kCpp
                                              ? egca::tools::BuildCppTests(a.tests)
                                              : egca::tracer::BuildTests(a.tests);
  if (!tests.ok()) return Fail(tests.status().ToString());

  egca::tracer::RunOptions options;
  options.limits.wall_seconds = a.timeout;
  options.limits.cpu_seconds = a.timeout;
  options.limits.memory_bytes = static_cast<uint64_t>(a.memory_mib * 1024 * 1024);
  options.limits.output_bytes = a.output_limit;
  options.apps_import_header = a.apps;
  options.apps_allclose = a.apps_allclose;
  options.stop_on_first_failure = a.stop_on_failure;
  egca::tracer::ParseTraceMode(a.trace_mode, &options.trace_mode);
  if (a.trace) options.trace_mode = egca::tracer::TraceMode::kNative;
  if (options.trace_mode == egca::tracer::TraceMode::kNative) options.trace.enabled = true;

  const bool traced = a.trace || options.trace_mode == egca::tracer::TraceMode::kNative;
  StatusOr<ProgramResult> result = egca::Internal("not run");
  std::vector<std::string> traces;  // per run test, when traced
  if (lang == egca::Language::kCpp) {
    if (!cpp_executor->ok()) return Fail(cpp_executor->status().ToString());
    egca::cpp::CppExecutor& cpp = *cpp_executor->value();
    egca::tracer::RunOptions run = options;
    run.trace_mode = egca::tracer::TraceMode::kNone;
    run.trace.enabled = false;
    result = cpp.RunAll(*source, *tests, run);
    if (!result.ok()) return Fail(result.status().ToString());
    if (traced) {
      auto dumps = CppTraces(cpp, *source, *tests, *result, run);
      if (!dumps.ok()) return Fail(dumps.status().ToString());
      traces = std::move(dumps).value();
    }
  } else {
    if (!executor->ok()) return Fail(executor->status().ToString());
    result = executor->value()->RunAll(*source, *tests, options);
    if (!result.ok()) return Fail(result.status().ToString());
    if (traced) {
      for (const TestResult& r : result->tests) {
        traces.push_back(r.trace != nullptr
                             ? egca::tracer::DumpTrace(*r.trace)
                             : "(no trace: the run ended before the harness returned it)\n");
      }
    }
  }

  if (a.json_output) {
    json out = {{"program", a.program},
                {"language", egca::LanguageName(lang)},
                {"passed", result->passed},
                {"total", result->total},
                {"pass_fraction", result->pass_fraction()}};
    json arr = json::array();
    for (size_t i = 0; i < result->tests.size(); ++i) {
      arr.push_back(VerdictJson((*tests)[i], result->tests[i],
                                i < traces.size() ? &traces[i] : nullptr));
    }
    out["tests"] = std::move(arr);
    fmt::print("{}\n", out.dump(2, ' ', false, json::error_handler_t::replace));
  } else {
    PrintTable(*tests, *result, a.trace ? traces : std::vector<std::string>{});
  }
  return result->all_passed() ? kExitAllPassed : kExitSomeFailed;
}
