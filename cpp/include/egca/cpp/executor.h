// CppExecutor: grades C++ candidates. Compiles each program once on the trusted side
// (Compiler), then runs each test in a fresh sandboxed child of a sandbox::ForkServer with
// the same limits, isolation and seccomp policy as Python candidates.
//
// How a compiled program runs: the server is a small warm process; each child receives the
// shared object's bytes in its request, writes them into its private directory, dlopen()s
// them and calls their `main(1, {"candidate"})` inside a try/catch. No exec is needed, so
// the seccomp policy (no execve) stays exactly as it is for Python; the child is isolated
// before any candidate code (static constructors included) runs. After `main` returns the
// child flushes stdio and iostreams and writes a completion record holding a per-run nonce
// to the result channel; the parent judges only from that plain record, the exit status
// and the captured output. A program that ends before its test completed (exit() in the
// candidate) never passes an assert-based test.
//
// Verdicts (as data, never errors):
//   SYNTAX_ERROR   clang rejected the program (line/column of its first error in the
//                  candidate; a failure located in the test code is reported at line 0)
//   WRONG_ANSWER   the test failed: an assert in the test code, an exception thrown by the
//                  test's own main (MBXP), main returning non-zero, or different stdout
//   RUNTIME_ERROR  the candidate crashed: SIGSEGV/SIGBUS/SIGFPE/SIGILL (error_type is the
//                  signal; line = the faulting statement when the crash address maps to the
//                  candidate through its debug info), an uncaught exception thrown outside
//                  the test's main (error_type = its C++ type, message = what()), abort(),
//                  a failing assert in the candidate
//   TIMEOUT / MEMORY_LIMIT (std::bad_alloc, or a crash at the address-space limit) /
//   OUTPUT_LIMIT / VIOLATION (the system call) / KILLED (any other ending)
// The nonce bounds what a candidate can forge only as far as it cannot read its own
// process's memory for it (the same process runs both): see docs/cpp.md. The server is
// its own program (egca-cpp-server, exec mode) by default, so that memory holds nothing
// of the caller's (expected outputs); kFork makes it a fork of the caller.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"
#include "egca/cpp/compiler.h"
#include "egca/cpp/trace.h"
#include "egca/sandbox/fork_server.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::cpp {

// The fork server program CppExecutor starts in exec mode.
inline constexpr char kCppServerName[] = "egca-cpp-server";

struct CppExecutorOptions {
  CompilerOptions compiler;
  std::string scratch_root = "/tmp/egca-sandbox";
  bool install_seccomp = true;  // off only to debug egca itself
  // kExec: the server is the program egca-cpp-server, so a candidate's process holds
  // nothing of the caller's memory (expected outputs). kFork: a fork of the caller, whose
  // address space at Create() every candidate can read (for comparisons and hosts without
  // the program).
  tracer::ServerStart server_start = tracer::ServerStart::kExec;
  // kExec: the server program to run. Empty: found by sandbox::FindServerBinary
  // ($EGCA_SERVER_DIR, next to the executable or the library, the build tree, the install
  // prefix); Create() fails naming every path tried when there is none.
  std::string server_binary;
};

// Where the compile went, per program (for reports and the router's SYNTAX span).
struct CompiledProgram {
  CompileResult compile;
  std::string test_code;  // the test code it was compiled with
};

class CppExecutor {
 public:
  // Finds clang, starts the fork server (exec mode: the egca-cpp-server program; kFork: a
  // fork of the caller, so create it early). Errors: no clang, the server program not
  // found (NOT_FOUND naming the paths tried), the server failed to start.
  static StatusOr<std::unique_ptr<CppExecutor>> Create(CppExecutorOptions options = {});
  ~CppExecutor();
  CppExecutor(const CppExecutor&) = delete;
  CppExecutor& operator=(const CppExecutor&) = delete;

  // Compiles `candidate` with each distinct test code (kAssert: the test's main; kStdio:
  // none, the candidate has its own main) and runs every test. A program that does not
  // compile gets SYNTAX_ERROR on the tests compiled with that code, without running.
  // `compiled` (optional) receives each compile, in first-use order.
  StatusOr<tracer::ProgramResult> RunAll(std::string_view candidate,
                                         const std::vector<tracer::TestCase>& tests,
                                         const tracer::RunOptions& options,
                                         std::vector<CompiledProgram>* compiled = nullptr);

  // Runs one compiled program (shared object) on one test in a fresh child. `result`
  // (optional) receives the child's raw result channel (snapshot events of a traced run).
  StatusOr<tracer::TestResult> RunCompiled(const std::string& shared_object,
                                           const tracer::TestCase& test,
                                           const tracer::RunOptions& options,
                                           std::string* result = nullptr);

  // Runs `candidate` on `test` instrumented for per-statement snapshots (see trace.h), at
  // most `max_events` events. The verdict is the traced run's (diagnostics only: grading
  // uses untraced runs). A candidate the instrumenter cannot handle, or whose instrumented
  // program does not compile, gives an empty trace with `note` saying why. Errors: the
  // instrumenter is not built (egca was configured without libclang-cpp).
  struct TracedRun {
    tracer::TestResult run;
    CppTrace trace;
    std::string note;
    double instrument_seconds = 0;
    double compile_seconds = 0;
  };
  StatusOr<TracedRun> RunTraced(std::string_view candidate, const tracer::TestCase& test,
                                const tracer::RunOptions& options, int64_t max_events = 20000);

  // Maps an address offset in a compiled program to its source location (debug info,
  // through llvm-symbolizer); unknown part when it cannot.
  PartLocation Symbolize(const std::string& shared_object, uint64_t offset);
  // The same for several offsets in one llvm-symbolizer run (one result per offset).
  std::vector<PartLocation> SymbolizeAll(const std::string& shared_object,
                                         const std::vector<uint64_t>& offsets);

  Compiler& compiler() { return *compiler_; }

 private:
  CppExecutor() = default;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<sandbox::ForkServer> server_;
  std::string symbolizer_;
};

// The test code a test is compiled with ("" for kStdio and kCall).
std::string TestCodeOf(const tracer::TestCase& test);

}  // namespace egca::cpp
