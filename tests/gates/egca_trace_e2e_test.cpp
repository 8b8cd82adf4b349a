// egca-trace end to end: the paper's case study, a real HumanEval failure (a CodeT sample
// against the canonical solution), JSON / plain text / HTML output, exit codes; without an
// expected value the reference's result is expected (issue 16, point 1); bad inputs are
// one line and exit 2 (point 2); NameError of the tests' own code (point 6); the section 5
// bypass (point 7); 1-based test numbers and the HTML page's contents (point 12).
#include <gtest/gtest.h>

#include "common/run_command.h"
#include "common/scratch_dir.h"
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "egca/core/files.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using RunOutput = egca::testing::CommandOutput;

std::string ToolPath() { return std::string(EGCA_BINARY_DIR) + "/tools/egca-trace/egca-trace"; }

RunOutput Invoke(const std::string& args, bool with_stderr = false) {
  return egca::testing::RunCommand(ToolPath() + " " + args +
                                   (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

class EgcaTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(ToolPath())) << ToolPath() << " is not built";
  }
  std::string Write(const std::string& name, const std::string& text) {
    return scratch_.Write(name, text);
  }
  static std::string Lis(const std::string& name) {
    auto src = egca::ReadFile(std::string(EGCA_SOURCE_DIR) + "/tests/tracer/golden/" + name);
    std::string s = src.ok() ? src.value() : "";
    return s.substr(0, s.find("\n\nresult = ")) + "\n";
  }
  egca::testing::ScratchDir scratch_{"egca_trace_tool"};
  const fs::path& dir_ = scratch_.path();
};

TEST_F(EgcaTrace, CaseStudyJson) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  RunOutput r =
      Invoke(cand + " " + ref +
             " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --expect 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  EXPECT_EQ(j["pass_fraction"], 0.0);
  const json& e = j["divergence"]["earliest"];
  EXPECT_EQ(e["kind"], "control");
  EXPECT_EQ(e["line"], 10);
  EXPECT_EQ(e["context"]["i"], "2");
  EXPECT_EQ(e["context"]["j"], "1");
  EXPECT_EQ(e["span"]["start_col"], 12);
  // The step table ends at the divergence.
  ASSERT_FALSE(j["divergence"]["steps"].empty());
  EXPECT_TRUE(j["divergence"]["steps"].back()["diverges"].get<bool>());
}

TEST_F(EgcaTrace, CaseStudyPlainTextWhenPiped) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  RunOutput r = Invoke(cand + " " + ref +
                       " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --expect 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "ANSI codes in piped output";
  EXPECT_NE(r.out.find("mode LOGIC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("> 10 |             if nums[i] >= nums[j]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("^^^^^^^^^^^^^^^^^^^^^^"), std::string::npos) << r.out;
  RunOutput colored =
      Invoke(cand + " " + ref +
             " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --color always");
  EXPECT_NE(colored.out.find("\x1b["), std::string::npos);
}

// HumanEval/0 (has_close_elements): CodeT's CodeGen-16B sample 1 compares only adjacent
// elements; the canonical solution compares every pair.
TEST_F(EgcaTrace, RealHumanEvalSampleAgainstCanonical) {
  std::string data = EGCA_DATA_DIR;
  auto he = egca::ReadMaybeGzipFile(data + "/humaneval/HumanEval.jsonl.gz");
  auto ct = egca::ReadMaybeGzipFile(
      data + "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz");
  ASSERT_TRUE(he.ok() && ct.ok());
  std::istringstream hs(he.value()), cs(ct.value());
  std::string hl, cl;
  std::getline(hs, hl);
  std::getline(cs, cl);
  json problem = json::parse(hl), samples = json::parse(cl);
  ASSERT_EQ(problem["entry_point"], "has_close_elements");
  std::string prompt = problem["prompt"];
  std::string cand = Write("cand.py", prompt + samples["samples"][1].get<std::string>());
  std::string ref = Write("ref.py", prompt + problem["canonical_solution"].get<std::string>());
  std::string test = Write("test.py", problem["test"]);
  std::string html = (dir_ / "page.html").string();
  RunOutput r = Invoke(cand + " " + ref + " --tests " + test +
                       " --entry-point has_close_elements --json --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  ASSERT_FALSE(j["divergence"]["earliest"].is_null()) << r.out;
  EXPECT_EQ(j["divergence"]["earliest"]["function"], "has_close_elements");
  // The candidate's only loop: `for i in range(len(numbers) - 1):`.
  EXPECT_EQ(j["divergence"]["earliest"]["line"], 12);
  auto page = egca::ReadFile(html);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page.value().find("<mark>for i in range(len(numbers) - 1):</mark>"), std::string::npos);
  EXPECT_NE(page.value().find("Aligned steps"), std::string::npos);
}

TEST_F(EgcaTrace, BadInputsExitWithTwo) {
  std::string ok = Write("ok.py", "def f(x):\n    return x\n");
  std::string broken = Write("broken.py", "def f(x)\n    return x\n");
  EXPECT_EQ(Invoke(ok).exit_code, 2);  // no reference
  EXPECT_EQ(Invoke(ok + " " + (dir_ / "missing.py").string() + " --fn f").exit_code, 2);
  EXPECT_EQ(Invoke(ok + " " + ok + " --fn f --input 'not json'").exit_code, 2);
  EXPECT_EQ(Invoke(ok + " " + ok).exit_code, 2);  // no tests
  RunOutput unknown = Invoke(ok + " " + ok + " --fn f --bogus", true);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.out, "egca-trace: The following argument was not expected: --bogus\n");
  RunOutput r = Invoke(ok + " " + broken + " --fn f --input '[1]'", true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("broken.py"), std::string::npos) << r.out;
  // A candidate that does not parse is data: SYNTAX, exit 0.
  RunOutput s = Invoke(broken + " " + ok + " --fn f --input '[1]' --json");
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(json::parse(s.out)["mode"], "SYNTAX");
}

// Point 1: the case study as the README gives it, without --expect: the reference's
// result (3) is the expected value, so the candidate's 4 is a wrong answer.
TEST_F(EgcaTrace, WithoutExpectTheReferenceGivesTheExpectedValue) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  RunOutput r = Invoke(cand + " " + ref +
                       " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  EXPECT_EQ(j["tests"][0]["verdict"], "WRONG_ANSWER");
  EXPECT_TRUE(j["tests"][0]["expected_from_reference"].get<bool>());
  EXPECT_EQ(j["tests"][0]["detail"], "got 4, the reference gives 3");
  EXPECT_EQ(j["divergence"]["earliest"]["line"], 10);
  // The correct program against itself passes.
  RunOutput same = Invoke(ref + " " + ref +
                          " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --json");
  ASSERT_EQ(same.exit_code, 0) << same.out;
  EXPECT_EQ(json::parse(same.out)["mode"], "CORRECT");
}

TEST_F(EgcaTrace, WithoutExpectedStdoutTheReferencePrintsTheExpectedOutput) {
  std::string ref = Write("ref.py", "n = int(input())\nprint(n * (n + 1) // 2)\n");
  std::string cand = Write("cand.py", "n = int(input())\nprint(n * (n - 1) // 2)\n");
  std::string in = Write("in.txt", "4\n");
  RunOutput r = Invoke(cand + " " + ref + " --stdin " + in + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  EXPECT_EQ(j["tests"][0]["detail"], "got 6\n, the reference gives 10\n");
}

// Issue 36: every Python LOGIC example of the README and examples/cli localizes to its
// faulty line, the standard-input one included (its wrong value exists only in what it
// prints: output is compared state).
TEST_F(EgcaTrace, ReadmeExamplesLocalizeTheFaultyLine) {
  const std::string x = std::string(EGCA_SOURCE_DIR) + "/examples/cli/";
  struct Example {
    std::string args;
    int line;
    std::string kind;
  };
  const std::vector<Example> examples = {
      {x + "lis_cand.py " + x + "lis_ref.py --fn longest_increasing_subsequence --input "
                                "'[[1, 3, 3, 5]]'",
       10, "control"},
      {x + "he0_cand.py " + x + "he0_ref.py --tests " + x + "he0_test.py", 12, "control"},
      {x + "tri_cand.py " + x + "tri_ref.py --stdin " + x + "tri_in.txt", 2, "output"},
  };
  for (const Example& e : examples) {
    RunOutput r = Invoke(e.args + " --json");
    ASSERT_EQ(r.exit_code, 0) << e.args << "\n" << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["mode"], "LOGIC") << e.args;
    ASSERT_TRUE(j["divergence"]["earliest"].is_object()) << e.args << "\n" << r.out;
    EXPECT_EQ(j["divergence"]["earliest"]["line"], e.line) << e.args << "\n" << r.out;
    EXPECT_EQ(j["divergence"]["earliest"]["kind"], e.kind) << e.args;
    EXPECT_GT(j["divergence"]["earliest"]["confidence"].get<double>(), 0) << e.args;
  }
  // The plain-text view names the printing line, where it said "no divergence found".
  RunOutput text = Invoke(examples[2].args);
  EXPECT_NE(text.out.find("output divergence"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("no divergence found"), std::string::npos) << text.out;
}

TEST_F(EgcaTrace, AReferenceFailingItsOwnTestIsReported) {
  std::string ref = Write("ref.py", "def f(x):\n    return x + 1\n");
  std::string cand = Write("cand.py", "def f(x):\n    return x + 2\n");
  RunOutput r = Invoke(cand + " " + ref + " --fn f --input '[1]' --expect 5", true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "egca-trace: the reference " + ref +
                       " fails its own test 1 (f(1)): WRONG_ANSWER got 2, expected 5\n");
  std::string raising = Write("raising.py", "def f(x):\n    return 1 // (x - 1)\n");
  RunOutput e = Invoke(cand + " " + raising + " --fn f --input '[1]'", true);
  EXPECT_EQ(e.exit_code, 2) << e.out;
  EXPECT_NE(e.out.find("fails its own test 1 (f(1)): RUNTIME_ERROR ZeroDivisionError"),
            std::string::npos)
      << e.out;
}

// Point 2: each bad input is one line naming what is wrong, exit 2.
TEST_F(EgcaTrace, BadInputsAreOneLineExit2) {
  std::string ok = Write("ok.py", "def f(x):\n    return x\n");
  std::string empty = Write("empty.py", "\n  \n");
  std::string comments = Write("comments.py", "# no test here\n");
  std::string prose = Write("prose.py", "x = 1\n");
  std::string in = Write("in.txt", "1\n");
  std::string empty_json = Write("cases.json", "[]");
  fs::create_directories(dir_ / "adir");
  std::string adir = (dir_ / "adir").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {ok + " " + ok + " --tests " + adir, "adir: is a directory, not a file"},
      {ok + " " + ok + " --tests " + empty, "empty.py: no test in it"},
      {ok + " " + ok + " --tests " + comments, "comments.py: no test in it"},
      {ok + " " + ok + " --tests " + prose, "prose.py: no test in it"},
      {ok + " " + ok + " --tests " + empty_json, "cases.json: no test in it (an empty list)"},
      {adir + " " + ok + " --fn f", "adir: is a directory, not a file"},
      {ok + " " + adir + " --fn f", "adir: is a directory, not a file"},
      {empty + " " + ok + " --fn f", "empty.py: the candidate is an empty file"},
      {ok + " " + empty + " --fn f", "empty.py: the reference is an empty file"},
      {ok + " " + ok + " --fn f --stdin " + in, "--fn and --stdin conflict"},
      {ok + " " + ok + " --fn f --tests " + prose, "--fn and --tests conflict"},
      {ok + " " + ok + " --fn f --entry-point f", "--entry-point needs --tests FILE"},
      {ok + " " + ok + " --fn f --setup " + ok, "--setup needs --tests FILE"},
      {ok + " " + ok + " --stdin " + in + " --expect-stdout " + in + " --expect-stdout " + in,
       "--expect-stdout given a different number of times than --stdin"},
  };
  for (const auto& [args, needle] : cases) {
    RunOutput r = Invoke(args, true);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("egca-trace: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
  }
}

// Point 2: a HumanEval test file that ends with check(NAME), as the official harness runs
// it, needs no --entry-point.
TEST_F(EgcaTrace, ACheckCallAtTheEndNamesTheEntryPoint) {
  std::string ref = Write("ref.py", "def inc(x):\n    return x + 1\n");
  std::string cand = Write("cand.py", "def inc(x):\n    return x + 2\n");
  std::string test =
      Write("test.py", "def check(candidate):\n    assert candidate(1) == 2\n\ncheck(inc)\n");
  RunOutput r = Invoke(cand + " " + ref + " --tests " + test + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["tests"][0]["name"], "check(inc)");
  EXPECT_EQ(j["mode"], "LOGIC");
  EXPECT_EQ(json::parse(Invoke(ref + " " + ref + " --tests " + test + " --json").out)["mode"],
            "CORRECT");
  RunOutput other = Invoke(cand + " " + ref + " --tests " + test + " --entry-point dec", true);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.out.find("calls check(inc)"), std::string::npos) << other.out;
}

// Point 6: a NameError the tests' own code raises (the entry point is missing) is not a
// wrong value to localize.
TEST_F(EgcaTrace, AMissingEntryPointIsNotLocalized) {
  std::string ref = Write("ref.py", "def f(x):\n    return x + 1\n");
  std::string cand = Write("cand.py", "def g(x):\n    return x + 1\n");
  std::string asserts = Write("asserts.py", "assert f(1) == 2\nassert f(2) == 3\n");
  for (const std::string& tests : {" --tests " + asserts, std::string(" --fn f --input '[1]'")}) {
    RunOutput r = Invoke(cand + " " + ref + tests + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    json j = json::parse(r.out);
    EXPECT_EQ(j["mode"], "CONSTRAINT") << tests;
    ASSERT_EQ(j["constraint_violations"].size(), 1u);
    EXPECT_EQ(j["constraint_violations"][0]["constraint"], "defines_tested_names");
    EXPECT_TRUE(j["divergence"].is_null()) << tests;
  }
}

// Point 7: a program that passes every test but is not comparable to the reference is
// CONSTRAINT by eq. 5, CORRECT with the section 5 bypass.
TEST_F(EgcaTrace, PassingButNotComparableAndTheBypass) {
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  std::string cand =
      Write("cand.py", "def longest_increasing_subsequence(nums):\n    return len(set(nums))\n");
  std::string args =
      cand + " " + ref + " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' --json";
  json gated = json::parse(Invoke(args).out);
  EXPECT_EQ(gated["mode"], "CONSTRAINT");
  EXPECT_EQ(gated["pass_fraction"], 1.0);
  EXPECT_EQ(gated["comparable"], false);
  EXPECT_TRUE(gated["passes_all_tests"].get<bool>());
  RunOutput text = Invoke(cand + " " + ref +
                          " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]'");
  EXPECT_NE(text.out.find("passes all tests, but routed CONSTRAINT by a static gate"),
            std::string::npos)
      << text.out;
  json bypassed = json::parse(Invoke(args + " --passing-bypasses-gates").out);
  EXPECT_EQ(bypassed["mode"], "CORRECT");
  EXPECT_EQ(bypassed["reward"], 1.0);
}

// Point 12: tests are numbered from 1 in text, JSON and HTML; the page shows the localized
// test and its input, the last divergence and the random boundary; --html says so.
TEST_F(EgcaTrace, OneBasedTestNumbersAndTheHtmlPage) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  std::string html = (dir_ / "page.html").string();
  std::string args = cand + " " + ref +
                     " --fn longest_increasing_subsequence --input '[[1, 2]]' --input "
                     "'[[1, 3, 3, 5]]'";
  RunOutput j = Invoke(args + " --json --html " + html);
  ASSERT_EQ(j.exit_code, 0) << j.out;
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["tests"][0]["number"], 1);
  EXPECT_EQ(doc["tests"][1]["number"], 2);
  EXPECT_EQ(doc["first_failing_test"], 2);
  RunOutput text = Invoke(args + " --html " + html, true);
  EXPECT_NE(text.out.find("\n    2 longest_increasing_subseq"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("localized on test 2:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("egca-trace: wrote " + html + "\n"), std::string::npos) << text.out;
  auto page = egca::ReadFile(html);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->find("Localized on test 2: longest_increasing_subsequence([1,3,3,5])"),
            std::string::npos);
  EXPECT_NE(page->find("longest_increasing_subsequence(*[[1, 3, 3, 5]])"), std::string::npos);
  EXPECT_NE(page->find("Earliest divergence (control)"), std::string::npos);
  EXPECT_NE(page->find("Last divergence (return)"), std::string::npos);
  EXPECT_NE(page->find("Random executed boundary"), std::string::npos);
  EXPECT_NE(page->find("<tr><td>2</td>"), std::string::npos);
}

// Point 12: the step table fits the terminal's width.
TEST_F(EgcaTrace, TablesFitTheWidth) {
  std::string cand = Write("cand.py", Lis("lis_buggy.py"));
  std::string ref = Write("ref.py", Lis("lis_correct.py"));
  for (int width : {80, 100, 160}) {
    RunOutput r = egca::testing::RunCommand(
        "COLUMNS=" + std::to_string(width) + " " + ToolPath() + " " + cand + " " + ref +
        " --fn longest_increasing_subsequence --input '[[1, 3, 3, 5]]' 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::istringstream lines(r.out);
    std::string line;
    bool in_table = false;
    while (std::getline(lines, line)) {
      if (line.rfind(" step ", 0) == 0) in_table = true;
      if (line.empty()) in_table = false;
      if (in_table) {
        EXPECT_LE(line.size(), static_cast<size_t>(width)) << width << ": " << line;
      }
    }
  }
}

// C++ candidates (egca::cpp::CppRouter) in the same views: the off-by-one loop bound is
// localized on the `for` line (it has no counterpart in the reference), the return value
// differs last; a crash is SYNTAX at the faulting line; stdio tests take the reference's
// output; mixed languages and Python-only options are bad usage.
constexpr const char* kCppRef =
    "int sum_to(int n) {\n  int s = 0;\n  for (int i = 1; i <= n; ++i) {\n    s += i;\n  }\n"
    "  return s;\n}\n";
constexpr const char* kCppCand =
    "int sum_to(int n) {\n  int s = 0;\n  for (int i = 1; i < n; ++i) {\n    s += i;\n  }\n"
    "  return s;\n}\n";
constexpr const char* kCppTest = "#include <cassert>\nint main() {\n  assert(sum_to(3) == 6);\n}\n";

TEST_F(EgcaTrace, CppLogicJsonTextAndHtml) {
  std::string cand = Write("cand.cpp", kCppCand);
  std::string ref = Write("ref.cpp", kCppRef);
  std::string test = Write("t.cpp", kCppTest);
  RunOutput r = Invoke(cand + " " + ref + " --tests " + test + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "LOGIC");
  EXPECT_EQ(j["first_failing_test"], 1);
  EXPECT_EQ(j["earliest_divergence"]["start_line"], 3);
  EXPECT_EQ(j["last_divergence"]["start_line"], 6);
  EXPECT_EQ(j["divergence"]["earliest"]["kind"], "control");
  EXPECT_EQ(j["divergence"]["last"]["kind"], "return");
  // Aligned steps up to the divergence: line 2 (s = 0) on both sides, then the for.
  ASSERT_EQ(j["divergence"]["steps"].size(), 2u) << j["divergence"]["steps"].dump();
  EXPECT_EQ(j["divergence"]["steps"][0]["candidate"]["line"], 2);
  EXPECT_EQ(j["divergence"]["steps"][0]["candidate"]["state"]["s"], "0");
  EXPECT_EQ(j["divergence"]["steps"][1]["diverges"], true);
  std::string html = (dir_ / "page.html").string();
  RunOutput text = Invoke(cand + " " + ref + " --tests " + test + " --color never --html " + html);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("mode LOGIC"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("earliest control divergence at line 3"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("last return divergence at line 6"), std::string::npos) << text.out;
  auto page = egca::ReadFile(html);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->find("Earliest divergence (control) at line 3"), std::string::npos);
  EXPECT_NE(page->find("<mark>  for (int i = 1; i &lt; n; ++i) {</mark>"), std::string::npos)
      << page.value();
}

TEST_F(EgcaTrace, CppCrashStdioAndBadUsage) {
  std::string ref = Write("ref.cpp",
                          "#include <iostream>\nint main() {\n  int n;\n  std::cin >> n;\n"
                          "  std::cout << 10 / n << \"\\n\";\n}\n");
  std::string cand = Write("cand.cpp",
                           "#include <iostream>\nint main() {\n  int n;\n  std::cin >> n;\n"
                           "  std::cout << 10 / (n - 2) << \"\\n\";\n}\n");
  std::string in = Write("in.txt", "2\n");
  RunOutput r = Invoke(cand + " " + ref + " --stdin " + in + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["mode"], "SYNTAX");  // eq. 5: a run-time error routes to SYNTAX
  EXPECT_EQ(j["error_span"]["start_line"], 5);
  EXPECT_EQ(j["error_message"].get<std::string>().rfind("SIGFPE", 0), 0u) << j["error_message"];
  // With the reference's output as the expected value, a wrong answer is LOGIC.
  std::string in3 = Write("in3.txt", "3\n");
  RunOutput wrong = Invoke(cand + " " + ref + " --stdin " + in3 + " --json");
  ASSERT_EQ(wrong.exit_code, 0) << wrong.out;
  json w = json::parse(wrong.out);
  EXPECT_EQ(w["mode"], "LOGIC");
  EXPECT_EQ(w["tests"][0]["expected_from_reference"], true);
  EXPECT_NE(w["tests"][0]["detail"].get<std::string>().find("the reference gives 3"),
            std::string::npos);
  // Bad usage: one line, exit 2.
  std::string py = Write("ref.py", "def f():\n    return 1\n");
  std::string test = Write("t.cpp", kCppTest);
  for (const std::string& args :
       {cand + " " + py + " --stdin " + in, cand + " " + ref + " --fn f --input '[]'",
        cand + " " + ref + " --stdin " + in + " --lang rust"}) {
    RunOutput bad = Invoke(args, true);
    EXPECT_EQ(bad.exit_code, 2) << args << ": " << bad.out;
    EXPECT_EQ(bad.out.rfind("egca-trace: ", 0), 0u) << bad.out;
    EXPECT_EQ(bad.out.find('\n'), bad.out.size() - 1) << bad.out;
  }
  // A reference that does not compile fails its own test: bad input.
  std::string broken = Write("broken.cpp", "int sum_to(int n) { return n +; }\n");
  RunOutput b = Invoke(Write("c2.cpp", kCppCand) + " " + broken + " --tests " + test, true);
  EXPECT_EQ(b.exit_code, 2) << b.out;
  EXPECT_NE(b.out.find("fails its own test 1"), std::string::npos) << b.out;
}

// I_cmp on Clang CFGs: a recursive candidate with a switch that passes is not comparable to
// the iterative reference (similarity 0.22 < C++'s 0.25: CONSTRAINT, eq. 5); section 5's
// bypass makes it CORRECT; --no-comparability drops the gate.
TEST_F(EgcaTrace, CppComparabilityGate) {
  std::string cand = Write("rec.cpp",
                           "int sum_to(int n) {\n  if (n <= 0) return 0;\n  switch (n) {\n"
                           "    case 1: return 1;\n    case 2: return 3;\n    default: break;\n  }\n"
                           "  return n + sum_to(n - 1);\n}\n");
  std::string ref = Write("ref.cpp", kCppRef);
  std::string test = Write("t.cpp", kCppTest);
  json gated = json::parse(Invoke(cand + " " + ref + " --tests " + test + " --json").out);
  EXPECT_EQ(gated["mode"], "CONSTRAINT");
  EXPECT_EQ(gated["passes_all_tests"], true);
  EXPECT_EQ(gated["comparable"], false);
  EXPECT_LT(gated["similarity"].get<double>(), 0.25);
  json bypass = json::parse(
      Invoke(cand + " " + ref + " --tests " + test + " --json --passing-bypasses-gates").out);
  EXPECT_EQ(bypass["mode"], "CORRECT");
  json off = json::parse(
      Invoke(cand + " " + ref + " --tests " + test + " --json --no-comparability").out);
  EXPECT_EQ(off["mode"], "CORRECT");
  EXPECT_TRUE(off["comparable"].is_null());
}

}  // namespace
