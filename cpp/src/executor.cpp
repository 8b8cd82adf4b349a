#include "egca/cpp/executor.h"

#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "child.h"
#include "snapshot_runtime.h"
#include "egca/core/files.h"
#include "egca/sandbox/command.h"
#include "egca/sandbox/server_binary.h"

namespace egca::cpp {
namespace {

using sandbox::Termination;
using sandbox::Verdict;
using sandbox::VerdictKind;

std::string NewNonce() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

std::string Bounded(std::string s, uint32_t limit) {
  if (s.size() > limit) {
    size_t cut = limit;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s.resize(cut);
    s += "...";
  }
  return s;
}

// What the child's result channel said (parsed as plain data, every field bounded).
struct ChildRecord {
  bool completed = false;  // a record carrying this run's nonce
  bool exited = false;     // "exit <rc>"
  int exit_code = 0;
  bool exception = false;
  std::string throw_offset;  // comma-separated hex offsets, innermost first, or "-"
  bool thrown_in_main = false;
  std::string exception_type;
  std::string exception_what;
  std::string setup_error;
  int fault_signal = 0;
  std::string fault_offset;  // comma-separated hex offsets, innermost first, or "-"
};

ChildRecord ParseRecord(const std::string& result, const std::string& nonce) {
  ChildRecord r;
  std::istringstream in(result);
  std::string line;
  bool ours = false;
  while (std::getline(in, line)) {
    if (line.rfind("signal ", 0) == 0) {
      std::istringstream f(line.substr(7));
      f >> r.fault_signal >> r.fault_offset;
      continue;
    }
    if (line == "egca-cpp " + nonce) {
      ours = true;
      continue;
    }
    if (!ours) continue;
    if (line.rfind("exit ", 0) == 0) {
      r.completed = r.exited = true;
      r.exit_code = std::atoi(line.c_str() + 5);
    } else if (line.rfind("exception ", 0) == 0) {
      r.completed = r.exception = true;
      size_t tab1 = line.find('\t');
      size_t tab2 = tab1 == std::string::npos ? std::string::npos : line.find('\t', tab1 + 1);
      std::istringstream f(line.substr(10, tab1 == std::string::npos ? std::string::npos : tab1 - 10));
      int in_main = 0;
      f >> r.throw_offset >> in_main;
      r.thrown_in_main = in_main == 1;
      if (tab1 != std::string::npos) {
        r.exception_type = line.substr(tab1 + 1, tab2 == std::string::npos ? std::string::npos
                                                                              : tab2 - tab1 - 1);
      }
      if (tab2 != std::string::npos) r.exception_what = line.substr(tab2 + 1);
    } else if (line.rfind("setup ", 0) == 0) {
      r.setup_error = line.substr(6);
    }
    ours = false;  // one record per nonce line
  }
  return r;
}

std::vector<std::string> Tokens(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

// APPS-style stdout comparison: exact, then whitespace tokens, then tokens as floats.
bool SameOutput(const std::string& actual, const std::string& expected,
                const tracer::RunOptions& options) {
  if (actual == expected) return true;
  std::vector<std::string> a = Tokens(actual), e = Tokens(expected);
  if (a == e) return true;
  if (a.size() != e.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == e[i]) continue;
    char* end_a = nullptr;
    char* end_e = nullptr;
    double x = std::strtod(a[i].c_str(), &end_a);
    double y = std::strtod(e[i].c_str(), &end_e);
    if (*end_a != '\0' || *end_e != '\0') return false;
    if (std::fabs(x - y) > options.float_abs_tolerance + options.float_rel_tolerance * std::fabs(y)) {
      return false;
    }
  }
  return true;
}

// glibc's assert message: "<prog>: <file>:<line>: <function>: Assertion `<expr>' failed."
bool FindAssertion(const std::string& stderr_text, PartLocation* at, std::string* text) {
  size_t pos = stderr_text.find("Assertion `");
  if (pos == std::string::npos) return false;
  size_t line_start = stderr_text.rfind('\n', pos);
  line_start = line_start == std::string::npos ? 0 : line_start + 1;
  size_t line_end = stderr_text.find('\n', pos);
  *text = stderr_text.substr(line_start, line_end == std::string::npos ? std::string::npos
                                                                     : line_end - line_start);
  for (std::string_view name : {"<candidate>:", "<test>:"}) {
    size_t f = text->find(name);
    if (f == std::string::npos) continue;
    int line = std::atoi(text->c_str() + f + name.size());
    *at = ParsePartLocation(name.substr(0, name.size() - 1), line, 0);
    break;
  }
  size_t expr = text->find("Assertion `");
  if (expr != std::string::npos) *text = text->substr(expr);
  return true;
}

uint64_t ParseHex(const std::string& s, bool* ok) {
  *ok = !s.empty() && s != "-";
  return *ok ? std::strtoull(s.c_str(), nullptr, 16) : 0;
}

}  // namespace

std::string TestCodeOf(const tracer::TestCase& test) {
  if (test.kind != tracer::TestKind::kAssert) return "";
  if (test.setup_code.empty()) return test.test_code;
  return test.setup_code + "\n" + test.test_code;
}

StatusOr<std::unique_ptr<CppExecutor>> CppExecutor::Create(CppExecutorOptions options) {
  std::unique_ptr<CppExecutor> ex(new CppExecutor());
  EGCA_ASSIGN_OR_RETURN(ex->compiler_, Compiler::Create(options.compiler));
  for (const char* name : {"llvm-symbolizer-14", "llvm-symbolizer"}) {
    auto r = sandbox::RunCommand({name, "--version"}, sandbox::CommandOptions::Within(10, 1 << 16));
    if (r.ok() && r->ok()) {
      ex->symbolizer_ = name;
      break;
    }
  }
  sandbox::ForkServerOptions fs;
  if (options.server_start == tracer::ServerStart::kExec) {
    EGCA_ASSIGN_OR_RETURN(fs.server_binary,
                          sandbox::FindServerBinary(kCppServerName, options.server_binary));
  } else {
    fs.child_main = [](std::string_view payload, int result_fd) {
      return internal::RunProgramChild(payload, result_fd);
    };
  }
  fs.scratch_root = options.scratch_root;
  fs.install_seccomp = options.install_seccomp;
  EGCA_ASSIGN_OR_RETURN(ex->server_, sandbox::ForkServer::Start(std::move(fs)));
  return ex;
}

CppExecutor::~CppExecutor() = default;

PartLocation CppExecutor::Symbolize(const std::string& shared_object, uint64_t offset) {
  return SymbolizeAll(shared_object, {offset}).front();
}

std::vector<PartLocation> CppExecutor::SymbolizeAll(const std::string& shared_object,
                                                    const std::vector<uint64_t>& offsets) {
  std::vector<PartLocation> out(offsets.size());
  if (symbolizer_.empty() || offsets.empty()) return out;
  std::vector<std::string> argv = {symbolizer_, "--obj=" + shared_object};
  for (uint64_t offset : offsets) argv.push_back(fmt::format("0x{:x}", offset));
  auto r = sandbox::RunCommand(argv, sandbox::CommandOptions::Within(20));
  if (!r.ok() || !r->ok()) return out;
  // Per address: "function\nfile:line:column\n" per frame, innermost (inlined) first, then
  // an empty line. The first frame in the candidate or the test names the address.
  std::istringstream in(r->stdout_data);
  std::string line;
  size_t index = 0;
  while (std::getline(in, line) && index < out.size()) {
    if (line.empty()) {
      ++index;
      continue;
    }
    if (out[index].part != ProgramPart::kUnknown) continue;
    size_t c2 = line.rfind(':');
    if (c2 == std::string::npos || c2 == 0) continue;
    size_t c1 = line.rfind(':', c2 - 1);
    if (c1 == std::string::npos) continue;
    int l = std::atoi(line.c_str() + c1 + 1);
    int c = std::atoi(line.c_str() + c2 + 1);
    out[index] = ParsePartLocation(std::string_view(line).substr(0, c1), l, c > 0 ? c - 1 : 0);
  }
  return out;
}

StatusOr<tracer::TestResult> CppExecutor::RunCompiled(const std::string& shared_object,
                                                      const tracer::TestCase& test,
                                                      const tracer::RunOptions& options,
                                                      std::string* result) {
  EGCA_ASSIGN_OR_RETURN(std::string object, ReadFile(shared_object));
  const std::string nonce = NewNonce();
  sandbox::ChildRequest request;
  request.payload = nonce + "\n" + object;
  request.limits = options.limits;
  if (test.kind == tracer::TestKind::kStdio) request.stdin_data = test.stdin_data;
  EGCA_ASSIGN_OR_RETURN(sandbox::ChildOutcome outcome, server_->Run(request));
  if (result != nullptr) *result = outcome.result;

  tracer::TestResult out;
  out.stdout_data = outcome.stdout_data;
  out.stderr_data = outcome.stderr_data;
  out.termination = outcome.termination;
  out.exit_code = outcome.exit_code;
  Verdict& v = out.verdict;
  v.wall_seconds = outcome.wall_seconds;
  v.cpu_seconds = outcome.cpu_seconds;
  v.max_rss_bytes = outcome.max_rss_bytes;
  v.minor_faults = outcome.minor_faults;
  v.phases = outcome.phases;
  const uint32_t limit = options.max_report_bytes;
  const ChildRecord rec = ParseRecord(outcome.result, nonce);
  // `list`: comma-separated offsets, innermost first (child.cpp): the first that maps to
  // the candidate gives the line; else the first in the test code, as detail.
  auto locate = [&](const std::string& list, bool is_return_address) {
    std::vector<uint64_t> offsets;
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      const std::string hex =
          list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
      bool ok = false;
      uint64_t offset = ParseHex(hex, &ok);
      if (ok && offset > 0 && offsets.size() < 64) {
        offsets.push_back(offset - (is_return_address ? 1 : 0));
      }
    }
    std::string test_detail;
    for (const PartLocation& at : SymbolizeAll(shared_object, offsets)) {
      if (at.part == ProgramPart::kCandidate) {
        v.line = at.line;
        v.column = at.column;
        return;
      }
      if (at.part == ProgramPart::kTest && test_detail.empty()) {
        test_detail = fmt::format("test line {}", at.line);
      }
    }
    if (!test_detail.empty()) v.detail = test_detail;
  };

  switch (outcome.termination) {
    case Termination::kWallTimeout:
      v.kind = VerdictKind::kTimeout;
      v.detail = fmt::format("wall-clock limit of {:g} s", options.limits.wall_seconds);
      return out;
    case Termination::kCpuTimeout:
      v.kind = VerdictKind::kTimeout;
      v.detail = fmt::format("CPU time limit of {:g} s", options.limits.cpu_seconds);
      return out;
    case Termination::kOutputLimit:
      v.kind = VerdictKind::kOutputLimit;
      v.detail = fmt::format("more than {} bytes of output", options.limits.output_bytes);
      return out;
    case Termination::kViolation:
      v.kind = VerdictKind::kViolation;
      v.signal = outcome.signal;
      v.detail = outcome.violation;
      return out;
    case Termination::kSignaled: {
      const int sig = outcome.signal;
      v.signal = sig;
      const bool near_limit =
          outcome.max_rss_bytes + (64ull << 20) >= options.limits.memory_bytes;
      if (sig == SIGXCPU) {
        v.kind = VerdictKind::kTimeout;
        v.detail = fmt::format("CPU time limit of {:g} s", options.limits.cpu_seconds);
        return out;
      }
      if (sig == SIGABRT) {
        PartLocation at;
        std::string text;
        if (FindAssertion(outcome.stderr_data, &at, &text)) {
          if (at.part == ProgramPart::kTest) {
            v.kind = VerdictKind::kWrongAnswer;
            v.detail = Bounded(fmt::format("test line {}: {}", at.line, text), limit);
            return out;
          }
          v.kind = VerdictKind::kRuntimeError;
          v.error_type = "AssertionError";
          v.message = Bounded(text, limit);
          v.line = at.part == ProgramPart::kCandidate ? at.line : 0;
          return out;
        }
        v.kind = VerdictKind::kRuntimeError;
        v.error_type = "SIGABRT";
        v.message = Bounded(outcome.stderr_data.substr(0, 400), limit);
        if (rec.fault_signal == sig) locate(rec.fault_offset, true);  // the abort() call
        return out;
      }
      if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) {
        if (sig == SIGSEGV && near_limit) {
          v.kind = VerdictKind::kMemoryLimit;
          v.detail = "SIGSEGV at the address-space limit";
          return out;
        }
        v.kind = VerdictKind::kRuntimeError;
        v.error_type = SignalName(sig);
        v.message = sig == SIGFPE ? "arithmetic error (division by zero?)"
                  : sig == SIGSEGV ? "invalid memory access (or stack overflow)"
                                   : "crashed";
        if (rec.fault_signal == sig) locate(rec.fault_offset, true);
        return out;
      }
      v.kind = near_limit ? VerdictKind::kMemoryLimit : VerdictKind::kKilled;
      v.detail = "killed by " + SignalName(sig);
      return out;
    }
    case Termination::kExited:
      break;
  }

  if (!rec.setup_error.empty()) {
    // The program could not be loaded or has no main: a defect of the program.
    v.kind = VerdictKind::kRuntimeError;
    v.error_type = "LoadError";
    v.message = Bounded(rec.setup_error, limit);
    return out;
  }
  if (rec.exception) {
    if (rec.exception_type == "std::bad_alloc") {
      v.kind = VerdictKind::kMemoryLimit;
      v.detail = "std::bad_alloc";
      return out;
    }
    if (rec.thrown_in_main && test.kind == tracer::TestKind::kAssert) {
      // The test's own main threw (MBXP: "Exception -- test case N did not pass.").
      v.kind = VerdictKind::kWrongAnswer;
      v.detail = Bounded(rec.exception_type + ": " + rec.exception_what, limit);
      v.actual = "";
      return out;
    }
    v.kind = VerdictKind::kRuntimeError;
    v.error_type = rec.exception_type;
    v.message = Bounded(rec.exception_what, limit);
    locate(rec.throw_offset, true);
    return out;
  }
  if (test.kind == tracer::TestKind::kStdio) {
    // A standard-input program may end with exit(0): its output is what counts.
    bool finished = rec.exited ? rec.exit_code == 0 : outcome.exit_code == 0;
    if (!finished) {
      v.kind = VerdictKind::kRuntimeError;
      v.error_type = "NonZeroExit";
      v.message = fmt::format("exit code {}", rec.exited ? rec.exit_code : outcome.exit_code);
      return out;
    }
    v.actual = Bounded(outcome.stdout_data, limit);
    if (!test.has_expected || SameOutput(outcome.stdout_data, test.expected_stdout, options)) {
      v.kind = VerdictKind::kOk;
      return out;
    }
    v.kind = VerdictKind::kWrongAnswer;
    v.expected = Bounded(test.expected_stdout, limit);
    return out;
  }
  if (!rec.completed) {
    v.kind = VerdictKind::kKilled;
    v.detail = fmt::format("exited with code {} before its test completed", outcome.exit_code);
    return out;
  }
  if (rec.exit_code != 0) {
    v.kind = VerdictKind::kWrongAnswer;
    v.detail = fmt::format("main returned {}", rec.exit_code);
    return out;
  }
  v.kind = VerdictKind::kOk;
  return out;
}

std::string InstrumenterPath() {
  if (const char* p = std::getenv("EGCA_CPP_INSTRUMENT"); p != nullptr && *p) return p;
#ifdef EGCA_CPP_INSTRUMENT
  return EGCA_CPP_INSTRUMENT;
#else
  return "";
#endif
}

StatusOr<CppExecutor::TracedRun> CppExecutor::RunTraced(std::string_view candidate,
                                                        const tracer::TestCase& test,
                                                        const tracer::RunOptions& options,
                                                        int64_t max_events) {
  TracedRun out;
  const std::string instrumenter = InstrumenterPath();
  if (instrumenter.empty()) {
    return FailedPrecondition(
        "C++ tracing needs egca-cpp-instrument (configure with libclang-14-dev and "
        "libclang-cpp14-dev installed)");
  }
  sandbox::CommandOptions copts = sandbox::CommandOptions::Within(30, 64u << 20);
  copts.stdin_data = std::string(candidate);
  EGCA_ASSIGN_OR_RETURN(auto inst, sandbox::RunCommand({instrumenter}, copts));
  out.instrument_seconds = inst.wall_seconds;
  if (!inst.ok()) {
    out.note = inst.timed_out ? "instrumenting timed out"
                              : "the instrumenter could not parse the candidate";
    return out;
  }
  const std::string prelude =
      fmt::format("#define EGCA_MAX_EVENTS {}\n{}", max_events, internal::kSnapshotRuntime);
  EGCA_ASSIGN_OR_RETURN(CompileResult compiled,
                        compiler_->Compile(inst.stdout_data, TestCodeOf(test), prelude));
  out.compile_seconds = compiled.seconds;
  if (!compiled.ok) {
    out.note = "the instrumented program does not compile: " + compiled.error_message;
    return out;
  }
  std::string result;
  EGCA_ASSIGN_OR_RETURN(out.run, RunCompiled(compiled.shared_object, test, options, &result));
  out.trace = ParseTrace(result);
  return out;
}

StatusOr<tracer::ProgramResult> CppExecutor::RunAll(std::string_view candidate,
                                                    const std::vector<tracer::TestCase>& tests,
                                                    const tracer::RunOptions& options,
                                                    std::vector<CompiledProgram>* compiled) {
  tracer::ProgramResult result;
  result.total = static_cast<int>(tests.size());
  std::vector<CompiledProgram> programs;
  for (const tracer::TestCase& test : tests) {
    if (test.kind == tracer::TestKind::kCall) {
      return InvalidArgument(
          "C++ candidates take assert tests (a test main) or stdin/stdout tests, not call tests");
    }
  }
  for (const tracer::TestCase& test : tests) {
    const std::string code = TestCodeOf(test);
    const CompiledProgram* program = nullptr;
    for (const CompiledProgram& p : programs) {
      if (p.test_code == code) program = &p;
    }
    if (program == nullptr) {
      EGCA_ASSIGN_OR_RETURN(CompileResult c, compiler_->Compile(candidate, code));
      programs.push_back({std::move(c), code});
      program = &programs.back();
    }
    tracer::TestResult r;
    if (!program->compile.ok) {
      Verdict& v = r.verdict;
      v.kind = VerdictKind::kSyntaxError;
      v.error_type = program->compile.timed_out ? "CompileTimeout" : "CompileError";
      v.message = Bounded(program->compile.error_message, options.max_report_bytes);
      if (program->compile.error_at.part == ProgramPart::kCandidate) {
        v.line = program->compile.error_at.line;
        v.column = program->compile.error_at.column;
      } else if (program->compile.error_at.part == ProgramPart::kTest) {
        v.detail = fmt::format("test line {}", program->compile.error_at.line);
      }
    } else {
      EGCA_ASSIGN_OR_RETURN(r, RunCompiled(program->compile.shared_object, test, options));
    }
    const bool passed = r.verdict.passed();
    result.passed += passed ? 1 : 0;
    result.tests.push_back(std::move(r));
    if (!passed && options.stop_on_first_failure) break;
  }
  if (compiled != nullptr) *compiled = std::move(programs);
  return result;
}

}  // namespace egca::cpp
