#include "egca/tracer/executor.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <future>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "assert_batching.h"
#include "child_main.h"
#include "egca/tracer/exec.pb.h"
#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_validate.h"
#include "judge.h"
#include "plain_value.h"
#include "python_runtime.h"
#include "result_channel.h"
#include "result_mapping.h"
#include "server_binary.h"
#include "test_session.h"

namespace egca::tracer {
namespace {

proto::TestKindProto KindToProto(TestKind kind) {
  switch (kind) {
    case TestKind::kStdio:
      return proto::TEST_KIND_STDIO;
    case TestKind::kAssert:
      return proto::TEST_KIND_ASSERT;
    case TestKind::kCall:
      break;
  }
  return proto::TEST_KIND_CALL;
}

proto::TraceModeProto ModeToProto(TraceMode mode) {
  switch (mode) {
    case TraceMode::kNative:
      return proto::TRACE_MODE_NATIVE;
    case TraceMode::kPythonSettrace:
      return proto::TRACE_MODE_PYTHON_SETTRACE;
    case TraceMode::kNone:
      break;
  }
  return proto::TRACE_MODE_NONE;
}

void TraceOptionsToProto(const TraceOptions& o, proto::TraceOptionsUsed* p) {
  p->set_max_events(o.max_events);
  p->set_max_bytes(o.max_bytes);
  p->set_record_lines(o.record_lines);
  p->set_record_calls(o.record_calls);
  p->set_record_returns(o.record_returns);
  p->set_record_exceptions(o.record_exceptions);
  p->set_record_variables(o.record_variables);
  p->set_container_prefix(o.container_prefix);
  p->set_max_string_bytes(o.max_string_bytes);
  p->set_max_repr_bytes(o.max_repr_bytes);
  p->set_max_render_depth(o.max_render_depth);
  p->set_max_hash_depth(o.max_hash_depth);
  p->set_hash_budget(o.hash_budget);
  p->set_stop_at_limit(o.stop_at_limit);
  p->set_max_hash_string_bytes(o.max_hash_string_bytes);
}

// The request holds nothing the candidate could pass with: the expected value and the
// expected output stay in this process (judge.h).
proto::ExecRequest BuildRequest(std::string_view source, const TestCase& test,
                                const RunOptions& options, uint64_t max_value_bytes,
                                bool retrace_in_child) {
  proto::ExecRequest r;
  r.set_source(std::string(source));
  r.set_kind(KindToProto(test.kind));
  r.set_function(test.function);
  r.set_args_json(test.args_json);
  r.set_stdin_data(test.stdin_data);
  r.set_setup_code(test.setup_code);
  r.set_test_code(test.test_code);
  r.set_entry_point(test.entry_point);
  r.set_problem_code(test.problem_code);
  r.set_apps_import_header(options.apps_import_header);
  r.set_trace_mode(ModeToProto(options.trace_mode));
  if (options.trace_mode == TraceMode::kNative) {
    TraceOptionsToProto(options.trace, r.mutable_trace_options());
    r.set_trace_seconds(options.trace_seconds);
    r.set_trace_budget_raises(options.trace_budget_raises && !retrace_in_child);
    r.set_retrace_visible_failures(retrace_in_child);
    r.set_retrace_exceptions(options.retrace_exceptions);
  }
  r.set_max_report_bytes(options.max_report_bytes);
  r.set_max_value_bytes(max_value_bytes);
  return r;
}

// Every assert test runs in two processes (the test code in a process that never runs
// candidate code, the program behind proxies in another; objects of the test's own
// classes and containers cross by value-result, harness.py), unless the caller asks for
// the one-process path (RunOptions::assert_tests_in_one_process, for comparisons).
bool RunsInTwoProcesses(const TestCase& test, const RunOptions& options) {
  return test.kind == TestKind::kAssert && !options.assert_tests_in_one_process;
}

// A call test's returned value may take this much of the result channel.
constexpr uint64_t kMaxValueBytes = 16ull << 20;
// Room for the rest of a record (messages, positions; a trace's code objects and framing).
constexpr uint64_t kRecordSlack = 1ull << 20;

// What the parent reads from one child's result channel: the records it can legitimately
// write, so a child writing junk cannot make the server and the caller hold more (the
// server drains and drops the rest).
uint64_t ResultCap(const RunOptions& options) {
  uint64_t cap = kMaxValueBytes + kRecordSlack;
  if (options.trace_mode == TraceMode::kNative) {
    const uint64_t trace = options.trace.max_bytes;
    cap = trace > options.limits.result_bytes ? options.limits.result_bytes
                                              : cap + trace + kRecordSlack;
  }
  return std::min(cap, options.limits.result_bytes);
}

// ---- One candidate process per program (a batch of assert tests) ----

// How the detail of a test that its batch never ran begins (Impl::NotRunAfter).
constexpr const char* kNotRunDetail = "not run: ";

std::atomic<int> g_assert_batching{static_cast<int>(AssertBatching::kFromEnvironment)};

// The candidate process of a batch, seen from outside: among the children of its fork
// server, the one that holds our end's peer (the socket whose inode we know), then held by
// a pidfd, so that neither the CPU reading nor the kill can reach another process even if
// the pid is reused. Nothing the candidate says is used to find it.
class CandidateWatch {
 public:
  CandidateWatch(int server_pid, ino_t socket_inode)
      : server_pid_(server_pid), link_(fmt::format("socket:[{}]", socket_inode)) {}
  ~CandidateWatch() {
    if (pidfd_ >= 0) close(pidfd_);
  }
  CandidateWatch(const CandidateWatch&) = delete;
  CandidateWatch& operator=(const CandidateWatch&) = delete;

  // True once the process is found (tried again at each call until then).
  bool Find() {
    if (pidfd_ >= 0) return true;
    if (server_pid_ <= 0) return false;
    const std::string tasks = fmt::format("/proc/{}/task", server_pid_);
    DIR* dir = opendir(tasks.c_str());
    if (dir == nullptr) return false;
    std::vector<int> children;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      std::string text;
      if (!ReadSmallFile(tasks + "/" + e->d_name + "/children", &text)) continue;
      size_t at = 0;
      while (at < text.size()) {
        char* end = nullptr;
        const long pid = std::strtol(text.c_str() + at, &end, 10);
        if (end == text.c_str() + at) break;
        if (pid > 0) children.push_back(static_cast<int>(pid));
        at = static_cast<size_t>(end - text.c_str());
      }
    }
    closedir(dir);
    for (int pid : children) {
      if (!HoldsSocket(pid)) continue;
      const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
      if (fd < 0) continue;
      if (HoldsSocket(pid)) {  // still the same process, now that the pidfd holds it
        pidfd_ = fd;
        pid_ = pid;
        return true;
      }
      close(fd);
    }
    return false;
  }

  // User + system CPU seconds of the whole process (all its threads); -1 when it is not
  // found or has ended.
  double CpuSeconds() {
    if (!Find() || Ended()) return -1;
    std::string text;
    if (!ReadSmallFile(fmt::format("/proc/{}/stat", pid_), &text)) return -1;
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) return -1;
    // Fields after the command: state (3) ... utime (14), stime (15).
    const char* at = text.c_str() + paren + 1;
    unsigned long long ticks[2] = {0, 0};
    for (int field = 3; field <= 15 && *at != '\0'; ++field) {
      while (*at == ' ') ++at;
      char* end = nullptr;
      const unsigned long long v = std::strtoull(at, &end, 10);
      if (field == 14) ticks[0] = v;
      if (field == 15) ticks[1] = v;
      while (*at != ' ' && *at != '\0') ++at;
    }
    static const double per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
    return static_cast<double>(ticks[0] + ticks[1]) / per_second;
  }

  // SIGKILL through the pidfd; false when the process was never found.
  bool Kill() {
    if (!Find()) return false;
    return syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0) == 0 || Ended();
  }

 private:
  bool Ended() const {
    pollfd p{pidfd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  bool HoldsSocket(int pid) const {
    const std::string fds = fmt::format("/proc/{}/fd", pid);
    DIR* dir = opendir(fds.c_str());
    if (dir == nullptr) return false;
    bool found = false;
    char target[64];
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      const std::string path = fds + "/" + e->d_name;
      const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
      if (n > 0 && link_.compare(0, std::string::npos, target, static_cast<size_t>(n)) == 0) {
        found = true;
        break;
      }
    }
    closedir(dir);
    return found;
  }

  static bool ReadSmallFile(const std::string& path, std::string* out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096];
    out->clear();
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out->append(buf, static_cast<size_t>(n));
      if (out->size() > (1u << 20)) break;
    }
    ::close(fd);
    return !out->empty();
  }

  int server_pid_;
  std::string link_;
  int pidfd_ = -1;
  int pid_ = 0;
};

}  // namespace

void SetAssertBatching(AssertBatching mode) { g_assert_batching = static_cast<int>(mode); }

bool AssertBatchingEnabled() {
  switch (static_cast<AssertBatching>(g_assert_batching.load())) {
    case AssertBatching::kOn:
      return true;
    case AssertBatching::kOff:
      return false;
    case AssertBatching::kFromEnvironment:
      break;
  }
  const char* env = std::getenv("EGCA_ASSERT_BATCH");
  return env == nullptr || std::string_view(env) != "0";
}

const char* TraceModeName(TraceMode mode) {
  switch (mode) {
    case TraceMode::kNone:
      return "none";
    case TraceMode::kNative:
      return "native";
    case TraceMode::kPythonSettrace:
      return "python_settrace";
  }
  return "none";
}

bool ParseTraceMode(std::string_view name, TraceMode* out) {
  for (TraceMode m : {TraceMode::kNone, TraceMode::kNative, TraceMode::kPythonSettrace}) {
    if (name == TraceModeName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

class Executor::Impl {
 public:
  Impl(ExecutorOptions options, sandbox::ForkServerOptions server_options,
       std::unique_ptr<sandbox::ForkServer> server)
      : options_(std::move(options)),
        server_options_(std::move(server_options)),
        server_(std::move(server)),
        rng_(std::random_device{}()) {}

  ~Impl() { EndSession(/*abort=*/false); }

  StatusOr<TestResult> Run(std::string_view source, const TestCase& test,
                           const RunOptions& options) {
    if (options.trace_mode != TraceMode::kNative || !options.retrace_failures) {
      return RunOnce(source, test, options, /*retrace_in_child=*/false);
    }
    // The graded run is untraced. A failure the child sees itself (an early exit, a failing
    // assert, an exception) is retraced in the same child after its record is written; a
    // wrong answer, which only this process can find (the child never sees the expected
    // value), is run again, traced, in a second child.
    const bool paired = RunsInTwoProcesses(test, options);
    // An assert test in two processes: the candidate process cannot see its failure; the
    // test process tells it once the test has failed, and it replays the test's calls
    // into a fresh run of the program, traced (RunPair). A replay that could not be made
    // (too much recorded, a program whose replay diverged) is retraced in a second pair.
    EGCA_ASSIGN_OR_RETURN(TestResult result,
                          RunOnce(source, test, options, /*retrace_in_child=*/true));
    if (!paired && result.verdict.kind != sandbox::VerdictKind::kWrongAnswer) return result;
    if (paired) {
      if (result.trace == nullptr) RetracePaired(source, test, options, &result);
      return result;
    }
    RunOptions traced = options;
    traced.retrace_failures = false;
    traced.trace_failures_only = false;
    traced.trace_budget_raises = false;
    // Its verdict does not count (a limit, the time budget): only its trace is wanted.
    StatusOr<TestResult> second = RunOnce(source, test, traced, /*retrace_in_child=*/false);
    if (second.ok()) result.trace = second->trace;
    return result;
  }

  StatusOr<ProgramResult> RunAll(std::string_view source, const std::vector<TestCase>& tests,
                                 const RunOptions& options) {
    ProgramResult program;
    program.total = static_cast<int>(tests.size());
    // The graded runs of the assert tests in two processes, as one batch (below).
    std::vector<std::optional<TestResult>> batched(tests.size());
    const bool retrace = options.trace_mode == TraceMode::kNative && options.retrace_failures;
    if (AssertBatchingEnabled() && (options.trace_mode == TraceMode::kNone || retrace)) {
      std::vector<size_t> paired;
      for (size_t i = 0; i < tests.size(); ++i) {
        if (RunsInTwoProcesses(tests[i], options)) paired.push_back(i);
      }
      if (paired.size() >= 2) {
        RunOptions graded = options;
        graded.trace_mode = TraceMode::kNone;
        EGCA_RETURN_IF_ERROR(RunSequence(source, tests, std::move(paired), graded, &batched));
      }
    }
    for (size_t i = 0; i < tests.size(); ++i) {
      if (!program.tests.empty() &&
          program.tests.back().verdict.kind == sandbox::VerdictKind::kSyntaxError) {
        // Compilation does not depend on the test: every test fails the same way.
        TestResult copy = program.tests.back();
        copy.stdout_data.clear();
        copy.stderr_data.clear();
        program.tests.push_back(std::move(copy));
        continue;
      }
      StatusOr<TestResult> result = Internal("not run");
      if (batched[i].has_value()) {
        result = std::move(*batched[i]);
        // A failing graded run is retraced in a pair of its own, as Run() does; a test the
        // batch never ran (NotRunAfter) has no run to trace.
        if (retrace && !result->verdict.passed() &&
            result->verdict.detail.rfind(kNotRunDetail, 0) != 0)
          RetracePaired(source, tests[i], options, &*result);
      } else {
        result = Run(source, tests[i], options);
      }
      if (!result.ok()) {
        return result.status().WithContext(fmt::format("test {}", i + 1));
      }
      if (result->verdict.passed()) ++program.passed;
      const bool failed = !result->verdict.passed();
      program.tests.push_back(std::move(result).value());
      if (failed && options.stop_on_first_failure) break;
    }
    return program;
  }

 private:
  // One child (an assert test: a pair, RunPair). retrace_in_child: with native tracing,
  // the graded run is untraced and a failure the child sees itself is retraced there
  // (ExecRequest.retrace_visible_failures).
  StatusOr<TestResult> RunOnce(std::string_view source, const TestCase& test,
                               const RunOptions& options, bool retrace_in_child) {
    const std::string what = test.name.empty() ? "test" : test.name;
    if (RunsInTwoProcesses(test, options)) {
      return RunPair(source, test, options, what, retrace_in_child);
    }
    PlainValue expected_value;
    const PlainValue* expected = nullptr;
    if (test.kind == TestKind::kCall && test.has_expected) {
      if (!ParsePythonJson(test.expected_json, &expected_value)) {
        return InvalidArgument("malformed test: expected value is not valid JSON: " +
                               BoundedText(test.expected_json, 80))
            .WithContext(what);
      }
      expected = &expected_value;
    }
    sandbox::ChildRequest request;
    request.limits = options.limits;
    request.limits.result_bytes = ResultCap(options);
    const uint64_t key = rng_() | 1;  // never 0, the proto default
    proto::ExecRequest exec =
        BuildRequest(source, test, options, std::min(kMaxValueBytes, request.limits.result_bytes),
                     retrace_in_child);
    exec.set_completion_key(key);
    exec.SerializeToString(&request.payload);
    if (test.kind == TestKind::kStdio) request.stdin_data = test.stdin_data;
    EGCA_ASSIGN_OR_RETURN(sandbox::ChildOutcome outcome, server_->Run(request));

    ResultChannel channel = ParseResultChannel(outcome.result);
    std::string().swap(outcome.result);
    if (channel.has_prepared && channel.prepared.outcome() == proto::EXEC_TEST_ERROR) {
      // Written before the candidate ran: egca's error, not the program's.
      return InvalidArgument("malformed test: " + channel.prepared.message()).WithContext(what);
    }
    auto record = std::make_shared<proto::ExecResult>(std::move(channel.completion));
    const bool has_record = channel.has_completion && record->completion_key() == key;
    StatusOr<sandbox::Verdict> verdict =
        MapVerdict(outcome, has_record ? record.get() : nullptr, options.limits);
    if (!verdict.ok()) return verdict.status().WithContext(what);
    TestResult result;
    result.verdict = std::move(verdict).value();
    sandbox::Verdict& v = result.verdict;
    if (v.kind == sandbox::VerdictKind::kOk && test.kind != TestKind::kAssert) {
      Judgement j =
          test.kind == TestKind::kCall
              ? JudgeCall(*record, expected, options.float_rel_tolerance,
                          options.float_abs_tolerance, options.max_report_bytes,
                          options.apps_allclose)
              : JudgeStdio(outcome.stdout_data, test.has_expected ? &test.expected_stdout : nullptr,
                           options.float_rel_tolerance, options.float_abs_tolerance,
                           options.max_report_bytes, options.apps_allclose);
      if (!j.passed) v.kind = sandbox::VerdictKind::kWrongAnswer;
      v.actual = std::move(j.actual);
      v.expected = std::move(j.expected);
      v.detail = std::move(j.detail);
    }
    v.minor_faults = outcome.minor_faults;
    v.phases = outcome.phases;
    if (outcome.result_truncated && v.detail.empty()) {
      v.detail = "result record exceeded the result channel limit";
    }
    result.termination = outcome.termination;
    result.exit_code = outcome.exit_code;
    result.stderr_data = std::move(outcome.stderr_data);
    result.stdout_data = std::move(outcome.stdout_data);
    if (has_record) TakeRetraceRecord(&channel, key, record.get());
    if (has_record) TakeRecordTrace(record, source, options, &result);
    return result;
  }

  // A record written before an in-child retrace (retrace_follows): its trace is the
  // retrace's, in the third record of `channel` (none when a limit stopped the retrace, or
  // a replay diverged). True when that trace was moved into `record`.
  static bool TakeRetraceRecord(ResultChannel* channel, uint64_t key, proto::ExecResult* record) {
    if (!record->retrace_follows()) return false;
    record->clear_trace();
    if (!channel->has_retrace || channel->retrace.completion_key() != key ||
        !channel->retrace.has_trace()) {
      return false;
    }
    record->mutable_trace()->Swap(channel->retrace.mutable_trace());
    return true;
  }

  // The candidate record's settrace snapshots and trace into `result`. The trace comes from
  // the candidate's process: every index in it is checked before anything reads it; a
  // forged one fails the run.
  static void TakeRecordTrace(const std::shared_ptr<proto::ExecResult>& record,
                              std::string_view source, const RunOptions& options,
                              TestResult* result) {
    sandbox::Verdict& v = result->verdict;
    result->settrace_snapshots = record->settrace_snapshots();
    if (!record->has_trace()) return;
    Status valid = ValidateTrace(record->trace(), source);
    if (!valid.ok()) {
      v.kind = sandbox::VerdictKind::kKilled;
      v.detail = "the child sent an invalid trace: " + valid.message();
    } else if (!(options.trace_failures_only && v.passed())) {
      // Aliasing constructor: the Trace lives inside the record, which it keeps alive.
      result->trace = std::shared_ptr<const proto::Trace>(record, &record->trace());
    }
  }

  // A paired assert test's failing graded run (untraced) is retraced in a second pair:
  // the candidate process cannot see a failing assert (an exception of the program's only
  // with retrace_exceptions; limits and syntax errors never). Only the trace is taken.
  void RetracePaired(std::string_view source, const TestCase& test, const RunOptions& options,
                     TestResult* result) {
    const sandbox::Verdict& v = result->verdict;
    const bool retrace =
        v.kind == sandbox::VerdictKind::kKilled || (v.kind == sandbox::VerdictKind::kRuntimeError &&
                                                    (v.line <= 0 || options.retrace_exceptions));
    if (!retrace) return;
    RunOptions traced = options;
    traced.retrace_failures = false;
    traced.trace_failures_only = false;
    traced.trace_budget_raises = false;
    // Its verdict does not count (a limit, the time budget): only its trace is wanted.
    StatusOr<TestResult> second = RunOnce(source, test, traced, /*retrace_in_child=*/false);
    if (second.ok()) result->trace = second->trace;
  }

  // The fork server of test processes: the same program and options as the candidates'
  // server, started at the first assert test.
  Status EnsureTestServer() {
    if (test_server_ != nullptr) return Status::Ok();
    EGCA_ASSIGN_OR_RETURN(test_server_, sandbox::ForkServer::Start(server_options_));
    return Status::Ok();
  }

  // An assert test in two processes: the candidate process runs the program and serves
  // calls on fd 4; the test process runs the test code against proxies over the other end
  // of the same socket pair. The verdict: the candidate process's when its run did not
  // end normally (a limit, a violation, a syntax error, an exception or exit at module
  // level, a crash), else the test process's, which never ran candidate code and decoded
  // every value it got strictly (harness.py, "Assert tests in two processes").
  //
  // retrace_in_child (native tracing): the candidate process records the frames it gets
  // and runs untraced; when the test fails, the test process says so after its verdict is
  // settled, and the candidate process (its record committed first, retrace_follows)
  // replays the frames into a fresh run of the program, traced (harness.retrace()). A
  // replay that sends a frame the graded run did not sends no trace.
  StatusOr<TestResult> RunPair(std::string_view source, const TestCase& test,
                               const RunOptions& options, const std::string& what,
                               bool retrace_in_child = false) {
    EGCA_RETURN_IF_ERROR(EnsureTestServer().WithContext("starting the test-process server"));
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      return Internal(fmt::format("socketpair: {}", std::strerror(errno)));
    }
    const uint64_t candidate_key = rng_() | 1;
    const uint64_t test_key = rng_() | 1;
    // The candidate's request holds no test code: the asserts' expected values stay out
    // of its process.
    TestCase program_only = test;
    program_only.test_code.clear();
    program_only.setup_code.clear();
    program_only.entry_point.clear();
    program_only.problem_code.clear();
    sandbox::ChildRequest candidate;
    candidate.limits = options.limits;
    candidate.limits.result_bytes = ResultCap(options);
    const bool retrace = retrace_in_child && options.trace_mode == TraceMode::kNative;
    proto::ExecRequest exec = BuildRequest(source, program_only, options,
                                           std::min(kMaxValueBytes, candidate.limits.result_bytes),
                                           retrace);
    exec.set_role(proto::ASSERT_ROLE_CANDIDATE);
    exec.set_completion_key(candidate_key);
    exec.SerializeToString(&candidate.payload);
    candidate.peer_fd = pair[0];  // Run() closes it once sent

    RunOptions untraced = options;
    untraced.trace_mode = TraceMode::kNone;
    untraced.apps_import_header = false;
    sandbox::ChildRequest tester;
    tester.limits = options.limits;
    tester.limits.result_bytes = kMaxValueBytes + kRecordSlack;
    proto::ExecRequest test_exec = BuildRequest("", test, untraced, kMaxValueBytes, false);
    test_exec.set_role(proto::ASSERT_ROLE_TEST);
    test_exec.set_completion_key(test_key);
    if (retrace) {
      // A failing test is replayed by the candidate process (a failure it would not
      // otherwise know of; the program's own exception only with retrace_exceptions).
      test_exec.set_retrace_visible_failures(true);
      test_exec.set_retrace_exceptions(options.retrace_exceptions);
    }
    test_exec.SerializeToString(&tester.payload);
    tester.peer_fd = pair[1];

    StatusOr<sandbox::ChildOutcome> test_outcome = Internal("the test process did not run");
    StatusOr<sandbox::ChildOutcome> outcome = Internal("the candidate process did not run");
    if (options.reuse_test_process) {
      outcome = RunWithSession(candidate, tester, options.limits, &test_outcome);
    } else {
      // The test-process server serves one child at a time: a running session ends first.
      if (session_ != nullptr) EndSession(/*abort=*/false);
      std::thread test_thread([&] { test_outcome = test_server_->Run(tester); });
      outcome = server_->Run(candidate);
      test_thread.join();
    }
    if (!outcome.ok()) return outcome.status();
    if (!test_outcome.ok()) return test_outcome.status().WithContext("the test process");

    ResultChannel test_channel = ParseResultChannel(test_outcome->result);
    if (test_channel.has_prepared && test_channel.prepared.outcome() == proto::EXEC_TEST_ERROR) {
      return InvalidArgument("malformed test: " + test_channel.prepared.message())
          .WithContext(what);
    }
    const bool has_test_record =
        test_channel.has_completion && test_channel.completion.completion_key() == test_key;
    const proto::ExecResult* test_record = has_test_record ? &test_channel.completion : nullptr;

    ResultChannel channel = ParseResultChannel(outcome->result);
    std::string().swap(outcome->result);
    if (channel.has_prepared && channel.prepared.outcome() == proto::EXEC_TEST_ERROR) {
      return InvalidArgument("malformed test: " + channel.prepared.message()).WithContext(what);
    }
    auto record = std::make_shared<proto::ExecResult>(std::move(channel.completion));
    const bool has_record = channel.has_completion && record->completion_key() == candidate_key;
    StatusOr<sandbox::Verdict> verdict =
        MapVerdict(*outcome, has_record ? record.get() : nullptr, options.limits);
    if (!verdict.ok()) return verdict.status().WithContext(what);
    StatusOr<TestResult> paired = PairResult(std::move(verdict).value(), *outcome, *test_outcome,
                                             test_record, record.get(), options);
    if (!paired.ok()) return paired.status().WithContext(what);
    TestResult result = std::move(paired).value();
    // With retrace_in_child, the replay's trace (none when it diverged).
    const bool replayed = has_record && TakeRetraceRecord(&channel, candidate_key, record.get());
    if (has_record) TakeRecordTrace(record, source, options, &result);
    result.trace_replayed = replayed && result.trace != nullptr;
    return result;
  }

  // A pair's result from its candidate process's verdict (`candidate_verdict`, MapVerdict)
  // and outcome: when the program ran normally and served every call it got, the test
  // process's record decides (JudgeByTestProcess) and the candidate process's costs stay
  // with it; the candidate process's faults, phases, ending and output go with the result
  // (its output moved out of `outcome`). RunPair, and a batch's first test that ran as in
  // a pair of its own (RunBatch). An error carries no context: the caller names the test.
  static StatusOr<TestResult> PairResult(sandbox::Verdict candidate_verdict,
                                         sandbox::ChildOutcome& outcome,
                                         const sandbox::ChildOutcome& test_outcome,
                                         const proto::ExecResult* test_record,
                                         const proto::ExecResult* candidate_record,
                                         const RunOptions& options) {
    TestResult result;
    result.verdict = std::move(candidate_verdict);
    sandbox::Verdict& v = result.verdict;
    if (v.kind == sandbox::VerdictKind::kOk) {
      EGCA_ASSIGN_OR_RETURN(sandbox::Verdict t, JudgeByTestProcess(test_outcome, test_record,
                                                                   candidate_record, options));
      t.wall_seconds = v.wall_seconds;
      t.cpu_seconds = v.cpu_seconds;
      t.max_rss_bytes = v.max_rss_bytes;
      v = std::move(t);
    }
    v.minor_faults = outcome.minor_faults;
    v.phases = outcome.phases;
    result.termination = outcome.termination;
    result.exit_code = outcome.exit_code;
    result.stderr_data = std::move(outcome.stderr_data);
    result.stdout_data = std::move(outcome.stdout_data);
    return result;
  }

  // The verdict of an assert test in two processes whose candidate process ran normally:
  // the test process's record decides. `candidate`: the candidate process's description of
  // the last exception its calls raised (untrusted text; it can only make a failing
  // verdict read differently).
  static StatusOr<sandbox::Verdict> JudgeByTestProcess(const sandbox::ChildOutcome& test_outcome,
                                                       const proto::ExecResult* test_record,
                                                       const proto::ExecResult* candidate,
                                                       const RunOptions& options) {
    EGCA_ASSIGN_OR_RETURN(sandbox::Verdict t,
                          MapVerdict(test_outcome, test_record, options.limits));
    if (test_record != nullptr && test_record->outcome() == proto::EXEC_PEER_GONE) {
      t.kind = sandbox::VerdictKind::kKilled;
      // What the test process refused (a reply writing a name the test's class
      // defines, a handle the test did not pass, a malformed frame), or the channel
      // closed (the candidate process ended).
      const std::string& why = test_record->detail();
      t.detail = why.empty() || why.find("the channel is closed") != std::string::npos
                     ? "the candidate process closed its channel before the test completed"
                     : BoundedText(why, options.max_report_bytes);
    } else if (test_record != nullptr && test_record->candidate_raised() && candidate != nullptr &&
               !candidate->error_type().empty()) {
      t.error_type = BoundedText(candidate->error_type(), 200);
      t.message = BoundedText(candidate->message(), options.max_report_bytes);
      t.line = candidate->line();
      t.column = candidate->column();
      t.end_line = candidate->end_line();
      t.end_column = candidate->end_column();
    }
    return t;
  }

  // ---- The reused test process (test_session.h) ----

  struct TestSession {
    int control = -1;    // our end of its control socket
    std::thread thread;  // inside test_server_->Run() for the session's whole life
    std::promise<void> ended;
    std::future<void> ended_future = ended.get_future();
    StatusOr<sandbox::ChildOutcome> outcome = Internal("the test process is running");
    sandbox::Limits limits;  // the tests' limits it was started with
    int served = 0;
  };
  // A session serves at most this many tests, then a fresh one starts (bounds whatever a
  // long run of tests could accumulate in one interpreter).
  static constexpr int kTestsPerSession = 500;

  static bool SameProcessLimits(const sandbox::Limits& a, const sandbox::Limits& b) {
    return a.memory_bytes == b.memory_bytes && a.file_bytes == b.file_bytes &&
           a.max_threads == b.max_threads && a.max_open_files == b.max_open_files;
  }

  Status EnsureSession(const sandbox::Limits& limits) {
    if (session_ != nullptr &&
        (session_->served >= kTestsPerSession || !SameProcessLimits(session_->limits, limits))) {
      EndSession(/*abort=*/false);
    }
    if (session_ != nullptr) return Status::Ok();
    EGCA_RETURN_IF_ERROR(EnsureTestServer().WithContext("starting the test-process server"));
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return Internal(fmt::format("socketpair: {}", std::strerror(errno)));
    }
    auto session = std::make_unique<TestSession>();
    session->control = sv[0];
    session->limits = limits;
    sandbox::ChildRequest request;
    request.limits = limits;
    // Each test is bounded by this process's deadline on its reply; the server's own
    // limits only bound the session as a whole.
    request.limits.wall_seconds = 1e7;
    request.limits.cpu_seconds = 1e7;
    request.limits.output_bytes = 1 << 20;
    request.limits.result_bytes = 1 << 20;
    proto::ExecRequest exec;
    exec.set_kind(proto::TEST_KIND_ASSERT);
    exec.set_role(proto::ASSERT_ROLE_TEST_SESSION);
    exec.SerializeToString(&request.payload);
    request.peer_fd = sv[1];  // Run() closes it once sent
    TestSession* s = session.get();
    sandbox::ForkServer* server = test_server_.get();
    s->thread = std::thread([s, server, request = std::move(request)]() mutable {
      s->outcome = server->Run(request);
      s->ended.set_value();
    });
    session_ = std::move(session);
    return Status::Ok();
  }

  // Ends the session: closing the control socket lets the child exit between tests;
  // `abort` (or a child that does not exit within 10 s) kills the test-process server.
  // Returns how the child ended.
  StatusOr<sandbox::ChildOutcome> EndSession(bool abort) {
    if (session_ == nullptr) return Internal("no test process");
    std::unique_ptr<TestSession> s = std::move(session_);
    if (abort) test_server_->Abort();
    close(s->control);
    if (s->ended_future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      test_server_->Abort();
    }
    s->thread.join();
    return std::move(s->outcome);
  }

  // Ends a session whose reply said it retires (test_session.h: it grew); how its child
  // ended is of no use (it exits on its own after that reply).
  void RetireSession() { static_cast<void>(EndSession(/*abort=*/false)); }

  // The pair with the reused test process: the test request (and the test process's end
  // of the pair's socket) goes to the session, the candidate runs in a fresh child, and
  // the session's reply must come within the test's wall limit of the request, and at
  // least 5 s after the candidate ended. A session that did not answer in time is killed (a
  // TIMEOUT, as a fresh test process killed at its wall limit was); one that died answers with how
  // it ended.
  StatusOr<sandbox::ChildOutcome> RunWithSession(sandbox::ChildRequest& candidate,
                                                 const sandbox::ChildRequest& tester,
                                                 const sandbox::Limits& limits,
                                                 StatusOr<sandbox::ChildOutcome>* test_outcome) {
    int test_end = tester.peer_fd;
    struct CloseFd {
      int& fd;
      ~CloseFd() {
        if (fd >= 0) close(fd);
      }
    } close_test_end{test_end};
    Status ready = EnsureSession(limits);
    if (!ready.ok()) {
      close(candidate.peer_fd);
      candidate.peer_fd = -1;
      return ready;
    }
    const double start = SteadySeconds();
    if (!SendSessionRequest(session_->control, tester.payload, test_end)) {
      // It ended between tests (killed, or refused to go on): one new session.
      EndSession(/*abort=*/true);
      ready = EnsureSession(limits);
      if (!ready.ok() || !SendSessionRequest(session_->control, tester.payload, test_end)) {
        close(candidate.peer_fd);
        candidate.peer_fd = -1;
        if (!ready.ok()) return ready;
        StatusOr<sandbox::ChildOutcome> ended = EndSession(/*abort=*/true);
        return Unavailable("the test process could not be started: " +
                           (ended.ok() ? std::string(sandbox::TerminationName(ended->termination))
                                       : ended.status().message()));
      }
    }
    close(test_end);  // the session holds its own copy now
    test_end = -1;
    StatusOr<sandbox::ChildOutcome> outcome = server_->Run(candidate);
    std::string reply;
    bool retiring = false;
    const SessionRead read =
        // The test's wall limit from the request, and never less than a grace period after
        // the candidate ended (a slow machine's kill, reap and the test's last decoding
        // must not cost a healthy test process).
        ReadSessionReply(session_->control,
                         std::max(start + limits.wall_seconds, SteadySeconds()) + 5.0,
                         kMaxValueBytes + kRecordSlack, &reply, &retiring);
    if (read == SessionRead::kOk) {
      ++session_->served;
      if (retiring) RetireSession();  // it grew: the next test gets a new one
      sandbox::ChildOutcome ok;
      ok.result = std::move(reply);
      ok.wall_seconds = SteadySeconds() - start;
      *test_outcome = std::move(ok);
    } else if (read == SessionRead::kTimeout) {
      EndSession(/*abort=*/true);
      sandbox::ChildOutcome late;
      late.termination = sandbox::Termination::kWallTimeout;
      late.wall_seconds = SteadySeconds() - start;
      *test_outcome = std::move(late);
    } else {
      // It died during this test (a limit, a crash: the server says how), or sent a reply
      // over its limit (killed).
      const bool malformed = read == SessionRead::kMalformed;
      StatusOr<sandbox::ChildOutcome> ended = EndSession(/*abort=*/malformed);
      if (!ended.ok() || malformed) {
        sandbox::ChildOutcome killed;
        killed.termination = sandbox::Termination::kSignaled;
        killed.signal = SIGKILL;
        killed.wall_seconds = SteadySeconds() - start;
        ended = std::move(killed);
      }
      ended->result.clear();  // a session's own channel carries no test's records
      *test_outcome = std::move(ended);
    }
    return outcome;
  }

  // ---- One candidate process per program: a batch of assert tests ----
  //
  // A program's assert tests in two processes run in one candidate process (the program's
  // module code runs once, as MBPP's harness runs all asserts of a program in one process)
  // and one test-process session, test after test, each test judged by its own record of
  // the test process (docs/executor.md, "One candidate process per program"). Every test
  // keeps its own time limits, measured here from outside the candidate process: wall time
  // from the moment the test is sent to the test process to its reply (for the batch's
  // first test, from the start of the candidate process: the program's module code counts,
  // as in a pair of its own), CPU time as the candidate process's CPU clock advanced
  // meanwhile (/proc, every 20 ms). A test over either is TIMEOUT; the candidate process
  // is killed. A pass needs what a pair of its own needs: the test process's record, and
  // a candidate process that ended normally after the batch, with its record.

  // Results for `order` (indices into `tests`, in order) into (*out)[index].
  Status RunSequence(std::string_view source, const std::vector<TestCase>& tests,
                     std::vector<size_t> order, const RunOptions& options,
                     std::vector<std::optional<TestResult>>* out) {
    std::set<size_t> replayed_test_process_failure;  // tests whose batch ran again once
    while (!order.empty()) {
      if (order.size() == 1) {
        const TestCase& test = tests[order[0]];
        StatusOr<TestResult> r =
            RunPair(source, test, options, test.name.empty() ? "test" : test.name);
        if (!r.ok()) return r.status().WithContext(fmt::format("test {}", order[0] + 1));
        (*out)[order[0]] = std::move(r).value();
        return Status::Ok();
      }
      const int server_pid = server_->server_pid();
      if (server_pid <= 0) {
        // The candidates' server is down (it restarts at the next Run()): its pid, which
        // the batch needs to watch its candidate process, is not known before. The first
        // test runs in a pair of its own.
        const TestCase& test = tests[order[0]];
        StatusOr<TestResult> r =
            RunPair(source, test, options, test.name.empty() ? "test" : test.name);
        if (!r.ok()) return r.status().WithContext(fmt::format("test {}", order[0] + 1));
        const bool syntax = r->verdict.kind == sandbox::VerdictKind::kSyntaxError;
        (*out)[order[0]] = std::move(r).value();
        if (syntax) return Status::Ok();
        order.erase(order.begin());
        continue;
      }
      EGCA_ASSIGN_OR_RETURN(Batch batch, RunBatch(source, tests, order, options, server_pid));
      if (batch.complete) {
        for (size_t p = 0; p < order.size(); ++p) (*out)[order[p]] = std::move(batch.results[p]);
        return Status::Ok();
      }
      const size_t s = batch.stop;
      if (batch.test_process_failed && replayed_test_process_failure.insert(order[s]).second) {
        // The test process (the sandbox's, shared by every program this executor runs)
        // died or stalled during this test while the program ran on: once per test, the
        // same sequence runs again, in order (no fresh start for the program: the tests
        // before it run again first). A second failure at the same test is final.
        continue;
      }
      // Final: whatever ended the batch during this test is its verdict (its time limits
      // were its own), and the tests after it fail with it: they share one process with
      // it, which ended (or was killed, or closed its channel) before they ran, as MBPP's
      // harness fails a program whose process ends before its last assert. A fresh process
      // for them would let a program opt out of its own state by ending the one it has.
      // The tests before it run again as a batch of their own: their passes came from a
      // process that did not end normally.
      const bool syntax = batch.stop_result.verdict.kind == sandbox::VerdictKind::kSyntaxError;
      if (batch.ended_unnamed && !syntax) {
        // The program's process ended in its module code (an exception at import, an
        // exit), before it saw anything of the batch's first test: that test has a pair's
        // verdict, and the others run as the next batch, as each would in a pair of its
        // own (the program saw no test to choose by).
        (*out)[order[0]] = std::move(batch.stop_result);
        order.erase(order.begin());
        continue;
      }
      for (size_t p = s + 1; p < order.size() && !syntax; ++p) {
        (*out)[order[p]] = NotRunAfter(batch.stop_result, order[s]);
      }
      (*out)[order[s]] = std::move(batch.stop_result);
      if (syntax) return Status::Ok();  // RunAll copies it to every later test
      order.resize(s);
    }
    return Status::Ok();
  }

  // The result of a test of a batch that ended during an earlier test (`ended`, the test
  // at index `ended_index`): that test's verdict, naming it; no time, output or trace of
  // its own.
  static TestResult NotRunAfter(const TestResult& ended, size_t ended_index) {
    TestResult r;
    r.verdict.kind = ended.verdict.kind;
    r.verdict.error_type = ended.verdict.error_type;
    r.verdict.signal = ended.verdict.signal;
    r.verdict.detail = fmt::format(
        "{}the program's process ended during test {} ({}), which this test shares one "
        "process with",
        kNotRunDetail, ended_index + 1, sandbox::VerdictName(ended.verdict.kind));
    r.termination = ended.termination;
    r.exit_code = ended.exit_code;
    return r;
  }

  // The most output one batch's candidate process may write (tests' limits times their
  // number, up to this).
  static constexpr uint64_t kBatchOutputCap = 32ull << 20;

  struct Batch {
    bool complete = false;            // every test has its final result
    std::vector<TestResult> results;  // complete: one per test of the batch
    size_t stop = 0;  // !complete: the test during which the batch ended (the candidate
                      // process ended, closed its channel or ran out of time, or the test
                      // process failed)
    bool timed_out = false;            // it ran past that test's time limits (and was killed)
    bool test_process_failed = false;  // the test process died or stalled during `stop`
    bool ended_unnamed = false;  // stop == 0, and the candidate process ended before it
                                 // described its names (in its module code)
    TestResult stop_result;      // !complete: that test's result in this batch
  };

  // One test's exchange with the test process in a batch.
  struct Served {
    sandbox::ChildOutcome outcome;  // the test process's reply (result: its channel)
    ResultChannel channel;
    uint64_t key = 0;
    double wall = 0;
    double cpu = -1;  // -1: the candidate's CPU clock could not be read
  };

  StatusOr<Batch> RunBatch(std::string_view source, const std::vector<TestCase>& tests,
                           const std::vector<size_t>& order, const RunOptions& options,
                           int server_pid) {
    const size_t n = order.size();
    const sandbox::Limits& limits = options.limits;
    EGCA_RETURN_IF_ERROR(EnsureTestServer().WithContext("starting the test-process server"));
    EGCA_RETURN_IF_ERROR(EnsureSession(limits));
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      return Internal(fmt::format("socketpair: {}", std::strerror(errno)));
    }
    struct stat socket_stat {};
    fstat(pair[0], &socket_stat);
    int test_end = pair[1];
    struct CloseFd {
      int& fd;
      ~CloseFd() {
        if (fd >= 0) close(fd);
      }
    } close_test_end{test_end};

    const uint64_t candidate_key = rng_() | 1;
    TestCase program_only = tests[order[0]];
    program_only.test_code.clear();
    program_only.setup_code.clear();
    program_only.entry_point.clear();
    program_only.problem_code.clear();
    sandbox::ChildRequest candidate;
    candidate.limits = limits;
    // The tests' own limits are enforced here (per test); the server's bound the batch.
    candidate.limits.wall_seconds = limits.wall_seconds * static_cast<double>(n) + 5.0;
    candidate.limits.cpu_seconds = limits.cpu_seconds * static_cast<double>(n) + 1.0;
    // Output adds up over the tests of one process: each test gets the room a pair of its
    // own has, up to kBatchOutputCap in all (a flood reaches the cap during one test, which
    // then fails: OUTPUT_LIMIT ends the batch like any ending of the program's).
    const uint64_t room = limits.output_bytes > kBatchOutputCap / n
                              ? kBatchOutputCap
                              : limits.output_bytes * static_cast<uint64_t>(n);
    candidate.limits.output_bytes = std::max(limits.output_bytes, room);
    candidate.limits.result_bytes = ResultCap(options);
    proto::ExecRequest exec = BuildRequest(source, program_only, options,
                                           std::min(kMaxValueBytes, candidate.limits.result_bytes),
                                           /*retrace_in_child=*/false);
    exec.set_role(proto::ASSERT_ROLE_CANDIDATE);
    exec.set_completion_key(candidate_key);
    exec.SerializeToString(&candidate.payload);
    candidate.peer_fd = pair[0];  // Run() closes it once sent

    // The candidate process runs (inside server_->Run) in a thread of its own; this one
    // drives the tests.
    StatusOr<sandbox::ChildOutcome> outcome = Internal("the candidate process did not run");
    std::promise<void> ended;
    std::future<void> ended_future = ended.get_future();
    // The server's pid now: server_pid() waits for a Run() in progress.
    CandidateWatch watch(server_pid, socket_stat.st_ino);
    const double start = SteadySeconds();
    std::thread candidate_thread([&] {
      outcome = server_->Run(candidate);
      ended.set_value();
    });
    bool killed = false;
    auto kill = [&] {
      if (killed) return;
      killed = true;
      if (watch.Kill()) return;
      // Not found (no /proc access): the server and its child go, unless the child has
      // ended meanwhile (the server is then idle and stays).
      if (ended_future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        server_->Abort();
      }
    };
    // Waits until `ready` or this test's limits run out (the candidate is then killed).
    // Returns 1 ready, 0 wall limit, -1 CPU limit.
    auto wait = [&](double t0, double cpu0, const std::function<bool(int timeout_ms)>& ready) {
      for (;;) {
        const double left = t0 + limits.wall_seconds - SteadySeconds();
        if (left <= 0) return 0;
        const double cpu = watch.CpuSeconds();
        if (cpu >= 0 && cpu0 >= 0 && cpu - cpu0 >= limits.cpu_seconds) return -1;
        if (ready(static_cast<int>(std::ceil(std::min(left, 0.02) * 1000)))) return 1;
      }
    };

    std::vector<Served> served;
    served.reserve(n);
    size_t stop = n;
    bool timed_out = false;
    sandbox::Termination timeout_kind = sandbox::Termination::kWallTimeout;
    bool test_process_failed = false;
    sandbox::ChildOutcome stop_test_outcome;  // the test process at `stop`
    const proto::ExecResult* stop_test_record = nullptr;
    ResultChannel stop_channel;
    Status error = Status::Ok();
    double t0 = start;
    double cpu0 = 0;
    for (size_t p = 0; p < n && error.ok(); ++p) {
      const TestCase& test = tests[order[p]];
      RunOptions untraced = options;
      untraced.trace_mode = TraceMode::kNone;
      untraced.apps_import_header = false;
      proto::ExecRequest test_exec = BuildRequest("", test, untraced, kMaxValueBytes, false);
      test_exec.set_role(proto::ASSERT_ROLE_TEST);
      const uint64_t test_key = rng_() | 1;
      test_exec.set_completion_key(test_key);
      test_exec.set_continues_candidate(p > 0);
      std::string payload;
      test_exec.SerializeToString(&payload);
      if (session_ == nullptr) {
        // The last test's session retired (it grew): a new one, before this test's clock.
        if (Status ready = EnsureSession(limits); !ready.ok()) {
          error = ready;
          break;
        }
      }
      if (p > 0) {
        t0 = SteadySeconds();
        cpu0 = watch.CpuSeconds();
      }
      if (!SendSessionRequest(session_->control, payload, test_end)) {
        // It ended between tests: one new session.
        EndSession(/*abort=*/true);
        Status ready = EnsureSession(limits);
        if (!ready.ok() || !SendSessionRequest(session_->control, payload, test_end)) {
          error = ready.ok() ? Unavailable("the test process could not be started") : ready;
          break;
        }
      }
      const int control = session_->control;
      const int waited = wait(t0, cpu0, [control](int ms) {
        pollfd pfd{control, POLLIN, 0};
        return ::poll(&pfd, 1, ms) > 0;
      });
      if (waited <= 0) {
        // Over this test's limits: the candidate process is killed; the test process then
        // sees the channel close and answers (or is replaced).
        kill();
        timed_out = true;
        timeout_kind =
            waited == 0 ? sandbox::Termination::kWallTimeout : sandbox::Termination::kCpuTimeout;
        stop = p;
        std::string reply;
        bool retiring = false;
        if (ReadSessionReply(control, SteadySeconds() + 5.0, kMaxValueBytes + kRecordSlack,
                             &reply, &retiring) == SessionRead::kOk) {
          ++session_->served;
          if (retiring) RetireSession();
        } else {
          EndSession(/*abort=*/true);
        }
        break;
      }
      std::string reply;
      bool retiring = false;
      const SessionRead read =
          ReadSessionReply(control, std::max(t0 + limits.wall_seconds, SteadySeconds()) + 5.0,
                           kMaxValueBytes + kRecordSlack, &reply, &retiring);
      Served s;
      s.key = test_key;
      s.wall = SteadySeconds() - t0;
      const double cpu = watch.CpuSeconds();
      s.cpu = cpu >= 0 && cpu0 >= 0 ? cpu - cpu0 : -1;
      if (read == SessionRead::kOk) {
        ++session_->served;
        if (retiring) RetireSession();  // the next test starts a new one
        s.outcome.result = std::move(reply);
        s.outcome.wall_seconds = s.wall;
        s.channel = ParseResultChannel(s.outcome.result);
        if (s.channel.has_prepared && s.channel.prepared.outcome() == proto::EXEC_TEST_ERROR) {
          error = InvalidArgument("malformed test: " + s.channel.prepared.message())
                      .WithContext(test.name.empty() ? "test" : test.name)
                      .WithContext(fmt::format("test {}", order[p] + 1));
          break;
        }
        const bool keyed =
            s.channel.has_completion && s.channel.completion.completion_key() == test_key;
        if (keyed && s.channel.completion.outcome() != proto::EXEC_PEER_GONE) {
          served.push_back(std::move(s));
          continue;
        }
        // The candidate process ended or closed its channel during this test (or the test
        // process wrote no record).
        stop = p;
        stop_test_outcome = std::move(s.outcome);
        stop_channel = std::move(s.channel);
        if (keyed) stop_test_record = &stop_channel.completion;
        break;
      }
      // The test process did not answer in time, or died (a limit, a crash: the server
      // says how), as RunWithSession handles it.
      stop = p;
      test_process_failed = true;
      if (read == SessionRead::kTimeout) {
        EndSession(/*abort=*/true);
        stop_test_outcome.termination = sandbox::Termination::kWallTimeout;
      } else {
        const bool malformed = read == SessionRead::kMalformed;
        StatusOr<sandbox::ChildOutcome> gone = EndSession(/*abort=*/malformed);
        if (!gone.ok() || malformed) {
          stop_test_outcome.termination = sandbox::Termination::kSignaled;
          stop_test_outcome.signal = SIGKILL;
        } else {
          stop_test_outcome = std::move(gone).value();
          stop_test_outcome.result.clear();
        }
      }
      stop_test_outcome.wall_seconds = s.wall;
      break;
    }

    // Done with the tests: the candidate process sees its channel close and ends, within
    // what is left of the last test's limits.
    close(test_end);
    test_end = -1;
    if (!error.ok()) {
      kill();
    } else if (!timed_out) {
      const int waited = wait(t0, cpu0, [&ended_future](int ms) {
        return ended_future.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready;
      });
      if (waited <= 0) {
        kill();
        timed_out = true;
        timeout_kind =
            waited == 0 ? sandbox::Termination::kWallTimeout : sandbox::Termination::kCpuTimeout;
        if (stop == n) stop = served.size() < n ? served.size() : n - 1;
      }
    }
    candidate_thread.join();
    if (!error.ok()) return error;
    if (!outcome.ok() && !killed) return outcome.status();

    Batch batch;
    if (timed_out) {
      // The limits that ran out are the test's own: TIMEOUT, as the server reports it.
      sandbox::ChildOutcome late;
      late.termination = timeout_kind;
      late.wall_seconds = SteadySeconds() - t0;
      if (outcome.ok()) {
        late.minor_faults = outcome->minor_faults;
        late.phases = outcome->phases;
        late.max_rss_bytes = outcome->max_rss_bytes;
      }
      EGCA_ASSIGN_OR_RETURN(sandbox::Verdict v, MapVerdict(late, nullptr, limits));
      v.minor_faults = late.minor_faults;
      v.phases = late.phases;
      batch.stop = stop;
      batch.timed_out = true;
      batch.stop_result.verdict = std::move(v);
      batch.stop_result.termination = timeout_kind;
      if (outcome.ok()) {
        batch.stop_result.stdout_data = std::move(outcome->stdout_data);
        batch.stop_result.stderr_data = std::move(outcome->stderr_data);
      }
      return batch;
    }

    ResultChannel channel = ParseResultChannel(outcome->result);
    std::string().swap(outcome->result);
    if (channel.has_prepared && channel.prepared.outcome() == proto::EXEC_TEST_ERROR) {
      return InvalidArgument("malformed test: " + channel.prepared.message());
    }
    const bool has_record =
        channel.has_completion && channel.completion.completion_key() == candidate_key;
    const proto::ExecResult* record = has_record ? &channel.completion : nullptr;
    EGCA_ASSIGN_OR_RETURN(sandbox::Verdict candidate_verdict, MapVerdict(*outcome, record, limits));

    if (stop == n && candidate_verdict.passed()) {
      // Every test answered and the candidate process ended normally: each test's verdict
      // is its test process's.
      const bool described = record->served_tests_size() == static_cast<int>(n);
      batch.complete = true;
      batch.results.resize(n);
      for (size_t p = 0; p < n; ++p) {
        Served& s = served[p];
        const proto::ExecResult* test_record = &s.channel.completion;
        StatusOr<sandbox::Verdict> judged = JudgeByTestProcess(
            s.outcome, test_record,
            described ? &record->served_tests(static_cast<int>(p)) : nullptr, options);
        if (!judged.ok()) return judged.status().WithContext(fmt::format("test {}", order[p] + 1));
        sandbox::Verdict v = std::move(judged).value();
        v.wall_seconds = s.wall;
        v.cpu_seconds = s.cpu >= 0 ? s.cpu : outcome->cpu_seconds / static_cast<double>(n);
        v.max_rss_bytes = outcome->max_rss_bytes;
        TestResult& r = batch.results[p];
        if (p == 0) {  // the process's costs once, with its first test
          v.minor_faults = outcome->minor_faults;
          v.phases = outcome->phases;
        }
        r.verdict = std::move(v);
        r.termination = outcome->termination;
        r.exit_code = outcome->exit_code;
        if (p + 1 == n) {  // what the process printed, with its last test
          r.stdout_data = std::move(outcome->stdout_data);
          r.stderr_data = std::move(outcome->stderr_data);
        }
      }
      return batch;
    }
    if (stop == n) stop = n - 1;  // it did not end normally after its last test
    batch.stop = stop;
    batch.test_process_failed = test_process_failed;
    batch.ended_unnamed = stop == 0 && !test_process_failed && stop_test_record != nullptr &&
                          !stop_test_record->candidate_named();
    // The test during which the batch ended gets what a pair gives for how it ended: the
    // candidate process's verdict when it did not end normally, else the test process's
    // (a closed channel, a reply it refused: KILLED; its own failure). For the batch's
    // first test that is exactly RunPair's verdict.
    const proto::ExecResult* described = record;
    if (stop > 0) {
      described = record != nullptr && record->served_tests_size() > static_cast<int>(stop)
                      ? &record->served_tests(static_cast<int>(stop))
                      : nullptr;
    }
    StatusOr<TestResult> result = PairResult(std::move(candidate_verdict), *outcome,
                                             stop_test_outcome, stop_test_record, described,
                                             options);
    if (!result.ok()) return result.status().WithContext(fmt::format("test {}", order[stop] + 1));
    batch.stop_result = std::move(result).value();
    return batch;
  }

  ExecutorOptions options_;
  sandbox::ForkServerOptions server_options_;  // for the test-process server
  std::unique_ptr<sandbox::ForkServer> server_;
  std::unique_ptr<sandbox::ForkServer> test_server_;  // null until the first assert test
  std::unique_ptr<TestSession> session_;              // the reused test process, when one runs
  std::mt19937_64 rng_;
};

StatusOr<std::unique_ptr<Executor>> Executor::Create(const ExecutorOptions& options) {
  proto::ServerConfig config;
  for (const std::string& name : options.preload_modules) config.add_preload_modules(name);
  config.set_stdlib_dir(InterpreterOptions{}.stdlib_dir);
  sandbox::ForkServerOptions server_options;
  if (options.server_start == ServerStart::kExec) {
    EGCA_ASSIGN_OR_RETURN(server_options.server_binary, FindPyServerBinary(options.server_binary));
    config.SerializeToString(&server_options.server_config);
  } else {
    server_options.warm_up = [config] {
      Status status = WarmUpExecutorServer(config);
      if (!status.ok()) {
        // The server cannot report a Status across the fork; it dies with the reason on
        // stderr and Start() reports the failed warm-up.
        fmt::print(stderr, "egca executor: {}\n", status.ToString());
        std::fflush(stderr);
        std::_Exit(70);
      }
    };
    server_options.child_main = &ExecutorChildMain;
  }
  server_options.scratch_root = options.scratch_root;
  server_options.install_seccomp = options.install_seccomp;
  // The interpreter's stdlib must stay readable when Landlock confines reads.
  server_options.readable_paths.push_back(config.stdlib_dir());
  EGCA_ASSIGN_OR_RETURN(std::unique_ptr<sandbox::ForkServer> server,
                        sandbox::ForkServer::Start(server_options));
  return std::unique_ptr<Executor>(
      new Executor(std::make_unique<Impl>(options, std::move(server_options), std::move(server))));
}

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

StatusOr<TestResult> Executor::Run(std::string_view source, const TestCase& test,
                                   const RunOptions& options) {
  return impl_->Run(source, test, options);
}

StatusOr<ProgramResult> Executor::RunAll(std::string_view source,
                                         const std::vector<TestCase>& tests,
                                         const RunOptions& options) {
  return impl_->RunAll(source, tests, options);
}

StatusOr<std::unique_ptr<ExecutorPool>> ExecutorPool::Create(const ExecutorOptions& options,
                                                             int workers) {
  if (workers < 1) return InvalidArgument(fmt::format("workers must be >= 1, got {}", workers));
  std::vector<std::unique_ptr<Executor>> executors;
  for (int i = 0; i < workers; ++i) {
    EGCA_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(options));
    executors.push_back(std::move(executor));
  }
  return std::unique_ptr<ExecutorPool>(new ExecutorPool(std::move(executors)));
}

ExecutorPool::ExecutorPool(std::vector<std::unique_ptr<Executor>> executors)
    : executors_(std::move(executors)) {}
ExecutorPool::~ExecutorPool() = default;

std::vector<StatusOr<ProgramResult>> ExecutorPool::RunBatch(const std::vector<ProgramJob>& jobs,
                                                            const RunOptions& options) {
  std::vector<std::optional<StatusOr<ProgramResult>>> slots(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&](Executor* executor) {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      slots[i].emplace(executor->RunAll(jobs[i].source, jobs[i].tests, options));
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < executors_.size(); ++w) threads.emplace_back(work, executors_[w].get());
  work(executors_[0].get());
  for (std::thread& t : threads) t.join();
  std::vector<StatusOr<ProgramResult>> results;
  results.reserve(jobs.size());
  for (auto& slot : slots) results.push_back(std::move(*slot));
  return results;
}

}  // namespace egca::tracer
