// egca-trace: route a candidate program against its reference (SYNTAX / CONSTRAINT / LOGIC
// / CORRECT) and, for LOGIC, show where its execution first diverges from the reference's.
//
//   egca-trace cand.py ref.py --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]'
//   egca-trace cand.py ref.py --stdin in.txt [--expect-stdout out.txt]
//   egca-trace cand.py ref.py --tests test.py [--entry-point has_close_elements]  (HumanEval)
//   egca-trace cand.py ref.py --tests asserts.py                               (MBPP/QuixBugs)
//   ... --json            one JSON document for machines
//   ... --html page.html  a self-contained page: both programs, the aligned steps
//   egca-trace cand.cpp ref.cpp --tests main.cpp        (C++: a test main that asserts)
//   egca-trace cand.cpp ref.cpp --stdin in.txt          (C++ programs with their own main)
//
// --lang auto|python|cpp (auto: the candidate's extension, else its content; the reference
// must read as the same language). C++ candidates are routed by egca::cpp::CppRouter
// (clang++, the same sandbox, per-statement snapshots aligned line by line) and shown in
// the same text / JSON / HTML views: one aligned step per executed statement.
//
// Tests are read as egca-run reads them (egca::tracer::BuildTests). The reference runs on
// every test first: a test without an expected value (no --expect / --expect-stdout) takes
// the reference's result as its expected value, and a reference that fails a test is bad
// input. Output for people: the mode and why, one verdict per test (numbered from 1), and
// for LOGIC a side-by-side table of the aligned steps up to and including the divergence,
// fitted to the terminal's width, then the candidate's source with the divergent span
// highlighted (ANSI colours on a terminal, markers when piped; --color to force).
//
// Exit status: 0 routed (whatever the mode), 2 bad usage, unreadable, empty or unparseable
// input files, a tests file with no test, or a reference that fails its own tests (one
// line on stderr), 1 egca itself failed.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/language.h"
#include "egca/cpp/router.h"
#include "egca/core/text.h"
#include "egca/gates/router.h"
#include "egca/tools/cli.h"
#include "egca/tools/language.h"
#include "egca/tools/trace_view.h"
#include "egca/tracer/test_args.h"
#include "egca/tracer/trace.pb.h"

namespace {

using egca::tools::OneLine;
using egca::tools::VerdictDetail;

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
using egca::tools::kExitUsage;

int Usage(const std::string& line) {
  std::cerr << "egca-trace: " << line << "\n";
  return kExitUsage;
}

// A program file: readable, UTF-8, not a directory, with some code in it.
egca::StatusOr<std::string> ReadProgram(const std::string& path, const char* role) {
  EGCA_ASSIGN_OR_RETURN(std::string text, egca::ReadSourceFile(path));
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    return egca::InvalidArgument(fmt::format("{}: the {} is an empty file", path, role));
  }
  return text;
}

// The exit for a failed reference check: egca's own failure is internal, anything else
// (the reference fails its tests, no expected value) is bad input.
int ReferenceCheckFailed(const egca::Status& checked) {
  if (checked.code() == egca::StatusCode::kInternal) {
    std::cerr << "egca-trace: " << checked.ToString() << "\n";
    return kExitInternal;
  }
  return Usage(checked.message());
}

// Prints the route (JSON or text) and writes the HTML page; the exit status.
int Show(const egca::tools::RouteViewInput& view, bool json_out, const std::string& color,
         size_t max_steps, const std::string& html_path) {
  if (json_out) {
    std::cout << egca::tools::RouteJson(view).dump(2) << "\n";
  } else {
    egca::tools::TextViewOptions text;
    text.color = color == "always" || (color == "auto" && isatty(STDOUT_FILENO));
    text.width = egca::tools::TerminalWidth();
    text.max_steps = max_steps;
    egca::tools::PrintRouteText(view, text);
  }
  if (!html_path.empty()) {
    std::ofstream out(html_path);
    out << egca::tools::RouteHtml(view);
    out.close();
    if (!out) return Usage("--html " + html_path + ": cannot write the file");
    std::cerr << "egca-trace: wrote " << html_path << "\n";
  }
  return kExitOk;
}

// CheckReference for C++: the reference runs every test (egca::cpp); a stdio test with no
// --expect-stdout takes its output. A reference that does not compile or fails is bad input.
egca::Status CheckCppReference(egca::cpp::CppExecutor& executor, const std::string& reference,
                               const std::string& ref_path, egca::tracer::RunOptions run,
                               std::vector<egca::tracer::TestCase>* tests,
                               std::vector<bool>* from_reference) {
  run.max_report_bytes = 1u << 24;
  from_reference->assign(tests->size(), false);
  auto result = executor.RunAll(reference, *tests, run);
  if (!result.ok()) return egca::Internal(result.status().ToString());
  for (size_t i = 0; i < tests->size() && i < result->tests.size(); ++i) {
    egca::tracer::TestCase& t = (*tests)[i];
    const egca::tracer::TestResult& r = result->tests[i];
    if (!r.verdict.passed()) {
      return egca::InvalidArgument(fmt::format(
          "the reference {} fails its own test {} ({}): {} {}", ref_path, i + 1,
          OneLine(t.name, 60), egca::sandbox::VerdictName(r.verdict.kind),
          OneLine(VerdictDetail(r.verdict), 160)));
    }
    if (t.kind != egca::tracer::TestKind::kStdio || t.has_expected) continue;
    t.expected_stdout = r.stdout_data;
    t.has_expected = true;
    (*from_reference)[i] = true;
  }
  return egca::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  // Python candidates run in forks of egca-py-server, an exec'd program that never holds
  // this process's memory; it still starts before the reference and the tests are read.
  // A C++ run carries no expected value on the command line (--expect is Python-only), so
  // its executor starts after parsing; the Python one starts now unless argv says C++.
  const std::optional<egca::Language> peeked = egca::tools::PeekLanguage(argc, argv);
  std::optional<egca::StatusOr<std::unique_ptr<egca::tracer::Executor>>> executor;
  if (peeked != egca::Language::kCpp) executor = egca::tracer::Executor::Create({});
  CLI::App app{
      "egca-trace: route a candidate against its reference and localize the earliest divergence"};
  std::string cand_path, ref_path, html_path, color = "auto", lang_flag = "auto";
  egca::tracer::TestArgs targs;
  bool json_out = false, runtime_is_logic = false, no_cmp = false, bypass = false;
  double timeout = 10;
  size_t max_steps = 30;
  uint64_t seed = 0;
  app.add_option("candidate", cand_path, "candidate program (.py, .cpp)")->required();
  app.add_option("reference", ref_path, "reference solution (.py, .cpp)")->required();
  app.add_option("--lang", lang_flag, egca::tools::kLanguageHelp)
      ->check(CLI::IsMember({"auto", "python", "cpp"}));
  // One value per occurrence: CLI11 would otherwise split '[[1, 3]]' into several.
  app.add_option("--fn", targs.function, "function to call (call-based tests)");
  app.add_option("--input", targs.inputs, "JSON array of arguments (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--expect", targs.expects, "expected return value as JSON (one per --input)")
      ->allow_extra_args(false);
  app.add_option("--stdin", targs.stdin_files, "file fed to standard input (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--expect-stdout", targs.expect_stdout_files,
                 "expected stdout file (one per --stdin)")
      ->allow_extra_args(false);
  app.add_option("--tests", targs.tests_file,
                 "tests file: .json cases, HumanEval check(), or assert lines");
  app.add_option("--setup", targs.setup_file, "setup code run before assertion tests");
  app.add_option("--entry-point", targs.entry_point, "function HumanEval's check() receives");
  app.add_flag("--json", json_out, "print one JSON document");
  app.add_option("--html", html_path, "also write a self-contained HTML page");
  app.add_option("--color", color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--timeout", timeout, "per-test wall/CPU limit, seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", max_steps, "aligned steps shown before the divergence");
  app.add_option("--seed", seed, "seed of the random-boundary target");
  app.add_flag("--runtime-error-is-logic", runtime_is_logic,
               "route run-time errors to LOGIC (appendix D.2)");
  app.add_flag("--no-comparability", no_cmp, "skip the I_cmp gate");
  app.add_flag("--passing-bypasses-gates", bypass,
               "a program that passes every test is CORRECT even if I_C or I_cmp rejects it "
               "(the bypass EGCA section 5 suggests)");
  if (auto exit_code = egca::tools::ParseArgs(app, argc, argv, "egca-trace")) return *exit_code;

  auto cand = ReadProgram(cand_path, "candidate");
  if (!cand.ok()) return Usage(cand.status().message());
  auto ref = ReadProgram(ref_path, "reference");
  if (!ref.ok()) return Usage(ref.status().message());
  const egca::Language lang = egca::tools::ResolveLanguage(lang_flag, cand_path, cand.value());
  if (lang_flag == "auto") {
    const egca::Language ref_lang = egca::DetectLanguage(ref_path, ref.value());
    if (ref_lang != lang) {
      return Usage(fmt::format("the candidate {} reads as {} but the reference {} as {}; give --lang",
                               cand_path, egca::LanguageName(lang), ref_path,
                               egca::LanguageName(ref_lang)));
    }
  }
  if (lang == egca::Language::kCpp) {
    // Started before the tests (expected outputs) are read.
    auto cpp_executor = egca::cpp::CppExecutor::Create({});
    auto cpp_tests = egca::tools::BuildCppTests(targs);
    if (!cpp_tests.ok()) return Usage(cpp_tests.status().message());
    if (!cpp_executor.ok()) {
      std::cerr << "egca-trace: " << cpp_executor.status().ToString() << "\n";
      return kExitInternal;
    }
    egca::tracer::RunOptions run;
    run.limits.wall_seconds = timeout;
    run.limits.cpu_seconds = timeout;
    std::vector<bool> from_reference;
    egca::Status checked = CheckCppReference(*cpp_executor.value(), ref.value(), ref_path, run,
                                             &cpp_tests.value(), &from_reference);
    if (!checked.ok()) return ReferenceCheckFailed(checked);
    egca::cpp::CppRouterOptions options;
    options.run = run;
    options.runtime_error_is_logic = runtime_is_logic;
    options.seed = seed;
    options.check_comparability = !no_cmp;
    options.passing_bypasses_gates = bypass;
    egca::cpp::CppRouter router(cpp_executor.value().get(), options);
    egca::gates::Problem problem;
    problem.reference = ref.value();
    problem.tests = cpp_tests.value();
    auto routed = router.Route(cand.value(), problem);
    if (!routed.ok()) {
      std::cerr << "egca-trace: " << routed.status().ToString() << "\n";
      return kExitInternal;
    }
    egca::tools::RouteViewInput view;
    view.route = &routed->route;
    view.tests = &problem.tests;
    view.from_reference = from_reference;
    view.candidate_path = cand_path;
    view.candidate = cand.value();
    view.reference_path = ref_path;
    view.reference = ref.value();
    return Show(view, json_out, color, max_steps, html_path);
  }
  if (!executor) executor = egca::tracer::Executor::Create({});  // argv named a .cpp file
  auto tests = egca::tracer::BuildTests(targs);
  if (!tests.ok()) return Usage(tests.status().message());
  if (auto p = egca::diff::PreparedProgram::Build(ref.value()); !p.ok()) {
    return Usage(ref_path + ": " + p.status().message());
  }
  if (!executor->ok()) {
    std::cerr << "egca-trace: " << executor->status().ToString() << "\n";
    return kExitInternal;
  }
  egca::tracer::RunOptions reference_run;
  reference_run.limits.wall_seconds = timeout;
  reference_run.limits.cpu_seconds = timeout;
  std::vector<bool> from_reference;
  egca::Status checked = egca::tools::CheckReference(*executor->value(), ref.value(), ref_path, reference_run,
                                        &tests.value(), &from_reference);
  if (!checked.ok()) return ReferenceCheckFailed(checked);
  egca::gates::RouterOptions options;
  options.run.limits.wall_seconds = timeout;
  options.run.limits.cpu_seconds = timeout;
  options.runtime_error_is_logic = runtime_is_logic;
  options.check_comparability = !no_cmp;
  options.passing_bypasses_gates = bypass;
  options.divergence.random_seed = seed;
  egca::gates::Router router(executor->value().get(), options);
  egca::gates::Problem problem;
  problem.reference = ref.value();
  problem.tests = tests.value();
  auto routed = router.Route(cand.value(), problem);
  if (!routed.ok()) {
    std::cerr << "egca-trace: " << routed.status().ToString() << "\n";
    return kExitInternal;
  }
  egca::tools::RouteViewInput view;
  view.route = &routed.value();
  view.tests = &problem.tests;
  view.from_reference = from_reference;
  view.candidate_path = cand_path;
  view.candidate = cand.value();
  view.reference_path = ref_path;
  view.reference = ref.value();
  return Show(view, json_out, color, max_steps, html_path);
}
