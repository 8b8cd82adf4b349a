#include "egca/tracer/executor.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include <atomic>
#include <optional>
#include <algorithm>
#include <random>
#include <future>
#include <thread>
#include <utility>

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
    cap = trace > options.limits.result_bytes ? options.limits.result_bytes : cap + trace + kRecordSlack;
  }
  return std::min(cap, options.limits.result_bytes);
}

}  // namespace

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
    // An assert test in two processes: the candidate process cannot see its failure, so
    // the graded pair runs untraced and a failure is retraced in a second pair.
    RunOptions graded = options;
    if (paired) graded.trace_mode = TraceMode::kNone;
    EGCA_ASSIGN_OR_RETURN(TestResult result,
                          RunOnce(source, test, graded, /*retrace_in_child=*/!paired));
    if (!paired && result.verdict.kind != sandbox::VerdictKind::kWrongAnswer) return result;
    if (paired) {
      // The candidate process cannot see a failing assert: a failure is retraced in a
      // second pair, as a wrong answer is (an exception of the program's only with
      // retrace_exceptions; limits and syntax errors never).
      const sandbox::Verdict& v = result.verdict;
      const bool retrace = v.kind == sandbox::VerdictKind::kKilled ||
                           (v.kind == sandbox::VerdictKind::kRuntimeError &&
                            (v.line <= 0 || options.retrace_exceptions));
      if (!retrace) return result;
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

 private:
  // One child (an assert test: a pair, RunPair). retrace_in_child: with native tracing,
  // the graded run is untraced and a failure the child sees itself is retraced there
  // (ExecRequest.retrace_visible_failures).
  StatusOr<TestResult> RunOnce(std::string_view source, const TestCase& test,
                               const RunOptions& options, bool retrace_in_child) {
    const std::string what = test.name.empty() ? "test" : test.name;
    if (RunsInTwoProcesses(test, options)) return RunPair(source, test, options, what);
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
      Judgement j = test.kind == TestKind::kCall
                        ? JudgeCall(*record, expected, options.float_rel_tolerance,
                                    options.float_abs_tolerance, options.max_report_bytes,
                                    options.apps_allclose)
                        : JudgeStdio(outcome.stdout_data,
                                     test.has_expected ? &test.expected_stdout : nullptr,
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
    if (has_record && record->retrace_follows()) {
      // The trace is the in-child retrace's, in the third record (a retrace stopped by a
      // limit leaves none).
      record->clear_trace();
      if (channel.has_retrace && channel.retrace.completion_key() == key &&
          channel.retrace.has_trace()) {
        record->mutable_trace()->Swap(channel.retrace.mutable_trace());
      }
    }
    if (has_record) TakeRecordTrace(record, source, options, &result);
    return result;
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
  StatusOr<TestResult> RunPair(std::string_view source, const TestCase& test,
                               const RunOptions& options, const std::string& what) {
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
    proto::ExecRequest exec = BuildRequest(
        source, program_only, options, std::min(kMaxValueBytes, candidate.limits.result_bytes),
        /*retrace_in_child=*/false);
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
      return InvalidArgument("malformed test: " + test_channel.prepared.message()).WithContext(what);
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
    TestResult result;
    result.verdict = std::move(verdict).value();
    sandbox::Verdict& v = result.verdict;
    if (v.kind == sandbox::VerdictKind::kOk) {
      // The program ran and served every call it got: the test process decides.
      StatusOr<sandbox::Verdict> judged = MapVerdict(*test_outcome, test_record, options.limits);
      if (!judged.ok()) return judged.status().WithContext(what);
      sandbox::Verdict t = std::move(judged).value();
      if (test_record != nullptr && test_record->outcome() == proto::EXEC_PEER_GONE) {
        t.kind = sandbox::VerdictKind::kKilled;
        // What the test process refused (a reply writing a name the test's class
        // defines, a handle the test did not pass, a malformed frame), or the channel
        // closed (the candidate process ended).
        const std::string& why = test_record->detail();
        t.detail = why.empty() || why.find("the channel is closed") != std::string::npos
                       ? "the candidate process closed its channel before the test completed"
                       : BoundedText(why, options.max_report_bytes);
      } else if (test_record != nullptr && test_record->candidate_raised() &&
                 !record->error_type().empty()) {
        // The candidate's exception, as its own process described it (untrusted text; it
        // can only make a failing verdict read differently).
        t.error_type = BoundedText(record->error_type(), 200);
        t.message = BoundedText(record->message(), options.max_report_bytes);
        t.line = record->line();
        t.column = record->column();
        t.end_line = record->end_line();
        t.end_column = record->end_column();
      }
      t.wall_seconds = v.wall_seconds;
      t.cpu_seconds = v.cpu_seconds;
      t.max_rss_bytes = v.max_rss_bytes;
      v = std::move(t);
    }
    v.minor_faults = outcome->minor_faults;
    v.phases = outcome->phases;
    result.termination = outcome->termination;
    result.exit_code = outcome->exit_code;
    result.stderr_data = std::move(outcome->stderr_data);
    result.stdout_data = std::move(outcome->stdout_data);
    if (has_record) TakeRecordTrace(record, source, options, &result);
    return result;
  }

  // ---- The reused test process (test_session.h) ----

  struct TestSession {
    int control = -1;  // our end of its control socket
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

  // The pair with the reused test process: the test request (and the test process's end
  // of the pair's socket) goes to the session, the candidate runs in a fresh child, and
  // the session's reply must come within the test's wall limit of the request, and at
  // least 5 s after the candidate ended. A session that did not answer in time is killed (a TIMEOUT, as a fresh test
  // process killed at its wall limit was); one that died answers with how it ended.
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
    const SessionRead read =
        // The test's wall limit from the request, and never less than a grace period after
        // the candidate ended (a slow machine's kill, reap and the test's last decoding
        // must not cost a healthy test process).
        ReadSessionReply(session_->control,
                         std::max(start + limits.wall_seconds, SteadySeconds()) + 5.0,
                         kMaxValueBytes + kRecordSlack, &reply);
    if (read == SessionRead::kOk) {
      ++session_->served;
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

  ExecutorOptions options_;
  sandbox::ForkServerOptions server_options_;  // for the test-process server
  std::unique_ptr<sandbox::ForkServer> server_;
  std::unique_ptr<sandbox::ForkServer> test_server_;  // null until the first assert test
  std::unique_ptr<TestSession> session_;  // the reused test process, when one runs
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
  return std::unique_ptr<Executor>(new Executor(
      std::make_unique<Impl>(options, std::move(server_options), std::move(server))));
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
  ProgramResult program;
  program.total = static_cast<int>(tests.size());
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
    StatusOr<TestResult> result = impl_->Run(source, tests[i], options);
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
