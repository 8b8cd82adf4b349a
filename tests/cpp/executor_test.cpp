// CppExecutor: compile once, run each test in the sandbox, every ending a verdict.
#include "egca/cpp/executor.h"

#include <gtest/gtest.h>

#include <string>

namespace egca::cpp {
namespace {

using sandbox::VerdictKind;
using tracer::TestCase;

CppExecutor& Executor() {
  static std::unique_ptr<CppExecutor> ex = [] {
    CppExecutorOptions options;
    options.compiler.cache_dir = std::string(EGCA_BINARY_DIR) + "/cpp-cache";
    auto created = CppExecutor::Create(options);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return std::move(created).value();
  }();
  return *ex;
}

tracer::RunOptions Quick() {
  tracer::RunOptions o;
  o.limits.wall_seconds = 5;
  o.limits.cpu_seconds = 2;
  return o;
}

tracer::TestResult RunOne(const std::string& candidate, const TestCase& test) {
  auto r = Executor().RunAll(candidate, {test}, Quick());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.value().tests.at(0);
}

const char* kAdd = "#include <vector>\nint add(int a, int b) {\n  return a + b;\n}\n";

TEST(CppExecutor, PassingAssertTestIsOk) {
  auto r = RunOne(kAdd, TestCase::Asserts("#include <cassert>\nint main() {\n  assert(add(2, 3) == 5);\n}\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kOk) << r.verdict.detail << r.stderr_data;
}

TEST(CppExecutor, FailingTestAssertIsWrongAnswerWithTestLine) {
  auto r = RunOne(kAdd, TestCase::Asserts("#include <cassert>\nint main() {\n  assert(add(2, 3) == 5);\n  assert(add(2, 2) == 5);\n}\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kWrongAnswer);
  EXPECT_NE(r.verdict.detail.find("test line 4"), std::string::npos) << r.verdict.detail;
}

TEST(CppExecutor, ExceptionThrownByTestMainIsWrongAnswer) {
  auto r = RunOne(kAdd, TestCase::Asserts(
      "#include <stdexcept>\nint main() {\n  if (add(1, 1) != 3) throw std::runtime_error(\"case 0\");\n}\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kWrongAnswer);
  EXPECT_NE(r.verdict.detail.find("case 0"), std::string::npos) << r.verdict.detail;
}

TEST(CppExecutor, CandidateExceptionIsRuntimeErrorAtItsLine) {
  auto r = RunOne("#include <stdexcept>\nint f(int x) {\n  if (x > 0)\n    throw std::out_of_range(\"too big\");\n  return x;\n}\n",
                  TestCase::Asserts("int main() { return f(3); }\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.verdict.error_type, "std::out_of_range");
  EXPECT_EQ(r.verdict.message, "too big");
  EXPECT_EQ(r.verdict.line, 4);
}

TEST(CppExecutor, CompileErrorIsSyntaxAtClangsLocation) {
  auto r = RunOne("int add(int a, int b) {\n  return a + c;\n}\n", TestCase::Asserts("int main() { return add(1, 2) != 3; }\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kSyntaxError);
  EXPECT_EQ(r.verdict.line, 2);
  EXPECT_EQ(r.verdict.column, 13);
  EXPECT_NE(r.verdict.message.find("undeclared identifier 'c'"), std::string::npos) << r.verdict.message;
}

TEST(CppExecutor, QuotedIncludeIsRefusedBeforeCompiling) {
  auto r = RunOne("#include \"/etc/passwd\"\nint add(int a, int b) { return a + b; }\n",
                  TestCase::Asserts("int main() { return 0; }\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kSyntaxError);
  EXPECT_EQ(r.verdict.line, 1);
}

TEST(CppExecutor, SegfaultIsRuntimeErrorAtTheFaultingLine) {
  auto r = RunOne("int get(int* p) {\n  int x = 1;\n  return p[0] + x;\n}\n",
                  TestCase::Asserts("int main() { return get(nullptr); }\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.verdict.error_type, "SIGSEGV");
  EXPECT_EQ(r.verdict.line, 3);
}

TEST(CppExecutor, DivisionByZeroIsSigfpe) {
  auto r = RunOne("int div(int a, int b) {\n  return a / b;\n}\n",
                  TestCase::Asserts("int main() { volatile int z = 0; return div(1, z); }\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.verdict.error_type, "SIGFPE");
  EXPECT_EQ(r.verdict.line, 2);
}

// Crashes and exceptions outside the candidate's own instructions are blamed on the
// candidate's statement that led there: abort(), a fault inside libc, a throw inside an
// instantiated standard-library template or libstdc++ helper, a stack overflow.
constexpr const char* kCrashy =
    "#include <cstdlib>\n#include <cstring>\n#include <string>\n#include <vector>\n"
    "int f(int x) {\n"
    "  if (x == 1) abort();\n"                                               // line 6
    "  if (x == 2) { const char* p = nullptr; return (int)strlen(p); }\n"   // line 7
    "  std::vector<int> v;\n"                                               // line 8
    "  if (x == 3) return v.at(3);\n"                                       // line 9
    "  if (x == 4) return std::stoi(\"x\");\n"                              // line 10
    "  if (x == 5) return f(x) + 1;\n"                                      // line 11
    "  return 0;\n}\n";

tracer::TestResult Crash(int x) {
  return RunOne(kCrashy, TestCase::Asserts("int main() { return f(" + std::to_string(x) +
                                           "); }\n"));
}

TEST(CppExecutor, AbortAndLibcFaultsAreBlamedOnTheCandidatesCall) {
  auto abort = Crash(1);
  EXPECT_EQ(abort.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(abort.verdict.error_type, "SIGABRT");
  EXPECT_EQ(abort.verdict.line, 6);
  auto in_libc = Crash(2);
  EXPECT_EQ(in_libc.verdict.error_type, "SIGSEGV");
  EXPECT_EQ(in_libc.verdict.line, 7);
}

TEST(CppExecutor, LibraryExceptionsAreBlamedOnTheCandidatesCall) {
  auto at = Crash(3);
  EXPECT_EQ(at.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(at.verdict.error_type, "std::out_of_range");
  EXPECT_NE(at.verdict.message.find("which is 3"), std::string::npos) << at.verdict.message;
  EXPECT_EQ(at.verdict.line, 9);
  auto stoi = Crash(4);
  EXPECT_EQ(stoi.verdict.error_type, "std::invalid_argument");
  EXPECT_EQ(stoi.verdict.message, "stoi");
  EXPECT_EQ(stoi.verdict.line, 10);
}

// std::string::substr is compiled into libstdc++.so (an extern template), so its out_of_range
// is thrown by libstdc++'s own __cxa_throw call, which egca-cpp-server's interposer records
// (cpp/server/library_throw.cpp). A throw the candidate caught before must not be blamed.
constexpr const char* kLibraryThrow =
    "#include <stdexcept>\n#include <string>\n"
    "int g(int x) {\n"
    "  try { throw std::runtime_error(\"caught\"); } catch (const std::exception&) {}\n"  // line 4
    "  std::string s = \"abc\";\n"
    "  return (int)s.substr(x).size();\n"                                                  // line 6
    "}\n";

TEST(CppExecutor, ExceptionsThrownInsideLibstdcxxAreBlamedOnTheCandidatesCall) {
  auto r = RunOne(kLibraryThrow, TestCase::Asserts("int main() { return g(10); }\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.verdict.error_type, "std::out_of_range");
  EXPECT_NE(r.verdict.message.find("substr"), std::string::npos) << r.verdict.message;
  EXPECT_EQ(r.verdict.line, 6);
  // Thrown by a library call in the test's own main: the test failed (as a throw in main).
  auto in_main = RunOne(kLibraryThrow, TestCase::Asserts(
      "int main() { std::string t = \"ab\"; g(1); return (int)t.substr(5).size(); }\n"));
  EXPECT_EQ(in_main.verdict.kind, VerdictKind::kWrongAnswer) << in_main.verdict.error_type;
}

TEST(CppExecutor, StackOverflowIsARuntimeErrorInTheCandidate) {
  auto r = Crash(5);
  EXPECT_EQ(r.verdict.kind, VerdictKind::kRuntimeError);
  EXPECT_EQ(r.verdict.error_type, "SIGSEGV");
  // The deepest frame faults while entering line 8's constructor or the call of line 11.
  EXPECT_TRUE(r.verdict.line == 8 || r.verdict.line == 11) << r.verdict.line;
}

TEST(CppExecutor, EarlyExitNeverPassesAnAssertTest) {
  auto r = RunOne("#include <cstdlib>\nint add(int a, int b) {\n  std::exit(0);\n}\n",
                  TestCase::Asserts("#include <cassert>\nint main() {\n  assert(add(2, 3) == 6);\n}\n"));
  EXPECT_EQ(r.verdict.kind, VerdictKind::kKilled);
}

TEST(CppExecutor, StdioProgramsCompareOutput) {
  const char* echo_sum = "#include <iostream>\nint main() {\n  long a, b;\n  std::cin >> a >> b;\n  std::cout << a + b << \"\\n\";\n}\n";
  auto r = Executor().RunAll(echo_sum, {TestCase::Stdio("1 2\n", "3\n"), TestCase::Stdio("5 5", "11")}, Quick());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tests[0].verdict.kind, VerdictKind::kOk);
  EXPECT_EQ(r->tests[1].verdict.kind, VerdictKind::kWrongAnswer);
  EXPECT_EQ(r->tests[1].verdict.actual, "10\n");
  EXPECT_EQ(r->passed, 1);
}

TEST(CppExecutor, InfiniteLoopIsTimeout) {
  tracer::RunOptions o = Quick();
  o.limits.wall_seconds = 2;
  o.limits.cpu_seconds = 0.5;
  auto all = Executor().RunAll("int spin() {\n  volatile int x = 0;\n  while (true) ++x;\n}\n",
                  {TestCase::Asserts("int main() { return spin(); }\n")}, o);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->tests[0].verdict.kind, VerdictKind::kTimeout);
}

TEST(CppExecutor, CheckIncludesNamesTheLine) {
  auto problems = CheckIncludes("#include <vector>\n  # include \"x.h\"\n#include <../etc/x>\n#include MACRO\n");
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].line, 2);
  EXPECT_EQ(problems[1].line, 3);
  EXPECT_EQ(problems[2].line, 4);
}

}  // namespace
}  // namespace egca::cpp
