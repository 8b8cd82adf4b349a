#include "child_main.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "egca/sandbox/fork_server.h"
#include "egca/sandbox/prefault.h"
#include "plain_value_encode.h"
#include "python_runtime.h"
#include "result_channel.h"
#include "test_session.h"
#include "trace_recorder.h"

namespace egca::tracer {
namespace {

const char* KindName(proto::TestKindProto kind) {
  switch (kind) {
    case proto::TEST_KIND_STDIO:
      return "stdio";
    case proto::TEST_KIND_ASSERT:
      return "assert";
    default:
      return "call";
  }
}

const char* RoleName(proto::AssertRoleProto role) {
  switch (role) {
    case proto::ASSERT_ROLE_CANDIDATE:
      return "candidate";
    case proto::ASSERT_ROLE_TEST:
      return "test";
    default:
      return "";
  }
}

const char* ModeName(proto::TraceModeProto mode) {
  switch (mode) {
    case proto::TRACE_MODE_NATIVE:
      return "native";
    case proto::TRACE_MODE_PYTHON_SETTRACE:
      return "python_settrace";
    default:
      return "none";
  }
}

// Steals `value`; a null value leaves the Python error set and returns false.
bool SetItem(PyObject* dict, const char* key, PyObject* value) {
  PyRef owned = PyRef::Steal(value);
  return owned && PyDict_SetItemString(dict, key, owned.get()) == 0;
}

bool SetString(PyObject* dict, const char* key, const std::string& value) {
  return SetItem(dict, key, PyUnicode_DecodeUTF8(value.data(), value.size(), "replace"));
}

PyRef BuildRequestDict(const proto::ExecRequest& r) {
  PyRef dict = PyRef::Steal(PyDict_New());
  if (!dict) return dict;
  PyObject* d = dict.get();
  bool ok = SetString(d, "source", r.source()) && SetString(d, "kind", KindName(r.kind())) &&
            SetString(d, "function", r.function()) && SetString(d, "args_json", r.args_json()) &&
            SetItem(d, "stdin",
                    PyBytes_FromStringAndSize(r.stdin_data().data(), r.stdin_data().size())) &&
            SetString(d, "setup_code", r.setup_code()) &&
            SetString(d, "test_code", r.test_code()) &&
            SetString(d, "entry_point", r.entry_point()) &&
            SetString(d, "problem_code", r.problem_code()) &&
            SetItem(d, "apps_import_header", PyBool_FromLong(r.apps_import_header())) &&
            SetString(d, "trace_mode", ModeName(r.trace_mode())) &&
            SetItem(d, "trace_seconds", PyFloat_FromDouble(r.trace_seconds())) &&
            SetItem(d, "trace_budget_raises", PyBool_FromLong(r.trace_budget_raises())) &&
            SetItem(d, "retrace_visible_failures", PyBool_FromLong(r.retrace_visible_failures())) &&
            SetItem(d, "retrace_exceptions", PyBool_FromLong(r.retrace_exceptions())) &&
            SetItem(d, "max_report_bytes", PyLong_FromUnsignedLong(r.max_report_bytes())) &&
            SetString(d, "role", RoleName(r.role())) &&
            SetItem(d, "continues_candidate", PyBool_FromLong(r.continues_candidate()));
  if (!ok) return PyRef();
  return dict;
}

// Borrowed lookups in the harness's result dict; missing keys give defaults.
std::string GetString(PyObject* dict, const char* key) {
  PyObject* value = PyDict_GetItemString(dict, key);
  if (value == nullptr) return {};
  if (PyBytes_Check(value)) {
    return std::string(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value));
  }
  if (!PyUnicode_Check(value)) return {};
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(value, &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    return {};
  }
  return std::string(utf8, size);
}

long long GetInt(PyObject* dict, const char* key) {
  PyObject* value = PyDict_GetItemString(dict, key);
  if (value == nullptr || !PyLong_Check(value)) return 0;
  long long v = PyLong_AsLongLong(value);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return v;
}

proto::ExecOutcome OutcomeFromName(const std::string& name) {
  if (name == "ok") return proto::EXEC_OK;
  if (name == "wrong_answer") return proto::EXEC_WRONG_ANSWER;
  if (name == "syntax_error") return proto::EXEC_SYNTAX_ERROR;
  if (name == "runtime_error") return proto::EXEC_RUNTIME_ERROR;
  if (name == "memory_error") return proto::EXEC_MEMORY_ERROR;
  if (name == "output_limit") return proto::EXEC_OUTPUT_LIMIT;
  if (name == "exited") return proto::EXEC_EXITED;
  if (name == "test_error") return proto::EXEC_TEST_ERROR;
  if (name == "peer_gone") return proto::EXEC_PEER_GONE;
  return proto::EXEC_OUTCOME_UNSPECIFIED;
}

void FillResult(PyObject* dict, size_t max_value_bytes, proto::ExecResult* out) {
  out->set_outcome(OutcomeFromName(GetString(dict, "outcome")));
  out->set_error_type(GetString(dict, "error_type"));
  out->set_message(GetString(dict, "message"));
  out->set_line(static_cast<int32_t>(GetInt(dict, "line")));
  out->set_column(static_cast<int32_t>(GetInt(dict, "column")));
  out->set_end_line(static_cast<int32_t>(GetInt(dict, "end_line")));
  out->set_end_column(static_cast<int32_t>(GetInt(dict, "end_column")));
  out->set_actual(GetString(dict, "actual"));
  out->set_detail(GetString(dict, "detail"));
  out->set_settrace_snapshots(static_cast<uint64_t>(GetInt(dict, "settrace_snapshots")));
  out->set_candidate_raised(GetInt(dict, "candidate_raised") != 0);
  out->set_candidate_named(GetInt(dict, "candidate_named") != 0);
  // The candidate process of assert tests: per test served, its last exception.
  PyObject* served = PyDict_GetItemString(dict, "served_tests");  // Borrowed.
  if (served != nullptr && PyList_Check(served)) {
    constexpr Py_ssize_t kMaxServed = 4096;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(served) && i < kMaxServed; ++i) {
      PyObject* item = PyList_GET_ITEM(served, i);  // Borrowed.
      proto::ExecResult* t = out->add_served_tests();
      if (!PyDict_Check(item)) continue;
      t->set_error_type(GetString(item, "error_type"));
      t->set_message(GetString(item, "message"));
      t->set_line(static_cast<int32_t>(GetInt(item, "line")));
      t->set_column(static_cast<int32_t>(GetInt(item, "column")));
      t->set_end_line(static_cast<int32_t>(GetInt(item, "end_line")));
      t->set_end_column(static_cast<int32_t>(GetInt(item, "end_column")));
    }
  }
  PyObject* value = PyDict_GetItemString(dict, "value");  // Borrowed.
  if (value != nullptr) {
    std::string why;
    if (EncodePlainValue(value, max_value_bytes, out->mutable_value(), &why)) {
      out->set_has_value(true);
    } else {
      out->clear_value();
      out->set_value_type(why);
    }
  }
}

TraceOptions TraceOptionsFromProto(const proto::TraceOptionsUsed& p) {
  TraceOptions o;
  o.enabled = true;
  o.max_events = p.max_events();
  o.max_bytes = p.max_bytes();
  o.record_lines = p.record_lines();
  o.record_calls = p.record_calls();
  o.record_returns = p.record_returns();
  o.record_exceptions = p.record_exceptions();
  o.record_variables = p.record_variables();
  o.container_prefix = p.container_prefix();
  o.max_string_bytes = p.max_string_bytes();
  o.max_repr_bytes = p.max_repr_bytes();
  o.max_render_depth = p.max_render_depth();
  o.max_hash_depth = p.max_hash_depth();
  o.hash_budget = p.hash_budget();
  o.stop_at_limit = p.stop_at_limit();
  o.max_hash_string_bytes = p.max_hash_string_bytes();
  return o;
}

// Appends `trace` (a serialized proto::Trace) to a serialized ExecResult as its field
// `trace`: a message's fields may come in any order on the wire.
void AppendTraceField(const std::string& trace, std::string* record) {
  using Out = google::protobuf::io::CodedOutputStream;
  constexpr uint32_t kTraceTag = (proto::ExecResult::kTraceFieldNumber << 3) | 2;
  uint8_t header[16];  // a tag and a length: at most 5 + 10 bytes
  uint8_t* end = Out::WriteVarint64ToArray(trace.size(), Out::WriteTagToArray(kTraceTag, header));
  record->append(reinterpret_cast<const char*>(header), static_cast<size_t>(end - header));
  record->append(trace);
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void FlushStream(const char* name) {
  PyObject* stream = PySys_GetObject(name);  // Borrowed.
  if (stream == nullptr) return;
  PyRef result = PyRef::Steal(PyObject_CallMethod(stream, "flush", nullptr));
  if (!result) PyErr_Clear();
}

}  // namespace

proto::ExecResult RunRequestInProcess(
    const proto::ExecRequest& request,
    const std::function<void(const proto::ExecResult&)>& on_prepared, std::string* serialized_trace,
    const std::function<void(const proto::ExecResult&)>& on_verdict) {
  proto::ExecResult result;
  PyObject* prepare_test = HarnessPrepareTest();
  PyObject* run_test = HarnessRunTest();
  if (prepare_test == nullptr || run_test == nullptr) {
    result.set_outcome(proto::EXEC_TEST_ERROR);
    result.set_message("the embedded interpreter is not initialized");
    if (on_prepared) on_prepared(result);
    return result;
  }
  // Before any candidate code: is the test well formed? The answer goes out first.
  PyRef dict = BuildRequestDict(request);
  PyRef prepared = dict ? PyRef::Steal(PyObject_CallOneArg(prepare_test, dict.get())) : PyRef();
  PyObject* state = nullptr;  // Borrowed from `prepared`.
  if (!prepared || !PyDict_Check(prepared.get())) {
    result.set_outcome(proto::EXEC_TEST_ERROR);
    result.set_message("the harness failed to prepare the test: " +
                       (PyErr_Occurred() ? FetchPythonError() : std::string("no answer")));
  } else if (GetString(prepared.get(), "outcome") != "prepared" ||
             (state = PyDict_GetItemString(prepared.get(), "prepared")) == nullptr) {
    result.set_outcome(proto::EXEC_TEST_ERROR);
    result.set_message(GetString(prepared.get(), "message"));
  } else {
    result.set_outcome(proto::EXEC_PREPARED);
  }
  if (on_prepared) on_prepared(result);
  if (result.outcome() == proto::EXEC_TEST_ERROR) return result;
  result.Clear();

  const bool native = request.trace_mode() == proto::TRACE_MODE_NATIVE;
  if (native) ConfigureTrace(TraceOptionsFromProto(request.trace_options()), request.source());
  PyRef record = PyRef::Steal(PyObject_CallOneArg(run_test, state));
  if (!record || !PyDict_Check(record.get())) {
    // The harness itself failed (possibly because the candidate sabotaged it): report an
    // unspecified outcome, which maps to KILLED.
    result.set_outcome(proto::EXEC_OUTCOME_UNSPECIFIED);
    result.set_detail("the harness failed: " +
                      (PyErr_Occurred() ? FetchPythonError() : std::string("no record")));
  } else {
    const uint64_t cap = request.max_value_bytes() > 0 ? request.max_value_bytes() : (16u << 20);
    FillResult(record.get(), static_cast<size_t>(cap), &result);
  }
  bool keep_trace = true;
  if (request.retrace_visible_failures()) {
    // The graded run was untraced; only a failure seen here has a (second, traced) run.
    keep_trace = record && PyDict_Check(record.get()) && HarnessRetracePending();
    if (keep_trace) {
      result.set_retrace_follows(true);
      if (on_verdict) on_verdict(result);
      keep_trace = HarnessRetrace();
    }
  }
  if (native && keep_trace) {
    if (serialized_trace == nullptr) {
      TakeTrace(result.mutable_trace());
    } else if (!TakeSerializedTrace(serialized_trace)) {
      serialized_trace->clear();
      result.set_detail(result.detail() + " (the trace was too large to serialize)");
    }
  }
  return result;
}

Status ExerciseChildPath(int rounds) {
  // The samples print to file descriptor 1 as candidates do; in the server that is the
  // caller's stdout, so it points at /dev/null meanwhile.
  std::fflush(stdout);
  const int saved_stdout = ::dup(1);
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved_stdout < 0 || devnull < 0 || ::dup2(devnull, 1) != 1) {
    return Internal("executor warm-up: cannot redirect stdout");
  }
  ::close(devnull);
  struct RestoreStdout {
    int fd;
    ~RestoreStdout() {
      ::dup2(fd, 1);
      ::close(fd);
    }
  } restore{saved_stdout};
  struct Sample {
    proto::TestKindProto kind;
    const char* source;
    const char* function;
    const char* args_json;
    const char* expected_json;
    const char* stdin_data;
    const char* test_code;
    const char* entry_point;
  };
  // Trusted programs covering every test kind and the verdict paths a child takes
  // (pass, wrong answer, exception with a position, syntax error). They import nothing
  // but sys, so the children's sys.modules is what it would be without them.
  static const Sample kSamples[] = {
      {proto::TEST_KIND_CALL, "def add(a, b):\n    return a + b\n", "add", "[1, 2]", "3", "", "",
       ""},
      {proto::TEST_KIND_CALL, "def add(a, b):\n    return [a, b]\n", "add", "[1, 2]", "[3]", "", "",
       ""},
      {proto::TEST_KIND_ASSERT,
       "def total(xs: list) -> int:\n"
       "    \"\"\"Sum.\"\"\"\n    return sum(x for x in xs)\n",
       "", "", "", "",
       "METADATA = {}\n\n\ndef check(candidate):\n    assert candidate([1, 2]) == 3\n"
       "    assert abs(candidate([0.5]) - 0.5) < 1e-6\n",
       "total"},
      {proto::TEST_KIND_ASSERT, "def f(x):\n    return x[0] // x[1]\n", "", "", "", "",
       "assert f([1, 0]) == 1\n", ""},
      {proto::TEST_KIND_STDIO,
       "import sys\nn = int(input())\nprint(n * 2)\nsys.stdout.write('x\\n')\n", "", "", "", "21\n",
       "", ""},
      {proto::TEST_KIND_CALL, "def add(a, b:\n    return a\n", "add", "[1, 2]", "3", "", "", ""},
  };
  for (int round = 0; round < rounds; ++round) {
    for (const Sample& sample : kSamples) {
      proto::ExecRequest request;
      request.set_kind(sample.kind);
      request.set_source(sample.source);
      request.set_function(sample.function);
      request.set_args_json(sample.args_json);
      request.set_stdin_data(sample.stdin_data);
      request.set_test_code(sample.test_code);
      request.set_entry_point(sample.entry_point);
      request.set_float_rel_tolerance(1e-5);
      request.set_float_abs_tolerance(1e-8);
      request.set_max_report_bytes(2048);
      std::string payload;
      proto::ExecRequest parsed;
      if (!request.SerializeToString(&payload) ||
          !parsed.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
        return Internal("executor warm-up: request round trip failed");
      }
      proto::ExecResult result = RunRequestInProcess(parsed);
      if (result.outcome() == proto::EXEC_OUTCOME_UNSPECIFIED ||
          result.outcome() == proto::EXEC_TEST_ERROR) {
        return Internal("executor warm-up: sample test failed: " + result.detail() +
                        result.message());
      }
      std::string bytes;
      if (!result.SerializeToString(&bytes)) return Internal("executor warm-up: serialize failed");
    }
  }
  FlushStream("stderr");
  FlushStream("stdout");
  return Status::Ok();
}

namespace {

// The 4-byte big-endian length-prefixed frames in `bytes`; -1 when they do not parse.
int CountFrames(const std::string& bytes) {
  int count = 0;
  for (size_t at = 0; at < bytes.size(); ++count) {
    if (bytes.size() - at < 4) return -1;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    const size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
    if (bytes.size() - at - 4 < n) return -1;
    at += 4 + n;
  }
  return count;
}

}  // namespace

Status ExerciseCandidateRole(const std::string& program, const std::string& frames) {
  const int calls = CountFrames(frames);
  if (calls < 0) return InvalidArgument("probe frames: not length-prefixed frames");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Internal(std::string("socketpair: ") + std::strerror(errno));
  }
  // Every frame is queued before the candidate side reads one (it never waits on a read),
  // and every reply fits while nobody reads them.
  const int buffer = static_cast<int>(std::min<size_t>(frames.size() + (64u << 10), 4u << 20));
  ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  ::setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  ::setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  if (sv[1] == sandbox::kChildPeerFd) {  // the test side's end must not sit where the candidate's goes
    const int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, sandbox::kChildPeerFd + 1);
    ::close(sv[1]);
    if (moved < 0) {
      ::close(sv[0]);
      return Internal(std::string("fcntl: ") + std::strerror(errno));
    }
    sv[1] = moved;
  }
  // The candidate's end at kChildPeerFd, where the harness reads it. socketpair() may have
  // put it there already (the lowest free descriptor): then it stays open. (Closing it
  // after a dup2 onto itself left the candidate side without a channel: until 2026-11-27
  // the probe never ran this path, and every spare faulted its pages in the job.)
  if (sv[0] != sandbox::kChildPeerFd) {
    if (::dup2(sv[0], sandbox::kChildPeerFd) != sandbox::kChildPeerFd) {
      const int error = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      return Internal(std::string("dup2: ") + std::strerror(error));
    }
    ::close(sv[0]);
  }
  // The test side ends its stream: the candidate side answers what is queued, then sees
  // the channel close (never a read that could wait).
  if (!WriteAll(sv[1], frames) || ::shutdown(sv[1], SHUT_WR) != 0) {
    ::close(sandbox::kChildPeerFd);
    ::close(sv[1]);
    return Internal("probe frames: cannot queue them");
  }
  proto::ExecRequest request;
  request.set_kind(proto::TEST_KIND_ASSERT);
  request.set_role(proto::ASSERT_ROLE_CANDIDATE);
  request.set_source(program);
  request.set_max_report_bytes(2048);
  const proto::ExecResult record = RunRequestInProcess(request);
  ::close(sandbox::kChildPeerFd);
  // What the candidate side sent: its names, then one reply per call.
  std::string replies;
  char buf[4096];
  for (ssize_t n; (n = ::read(sv[1], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    replies.append(buf, static_cast<size_t>(n));
  }
  ::close(sv[1]);
  if (record.outcome() != proto::EXEC_OK) {
    return Internal(fmt::format("probe program: outcome {} ({}{})", static_cast<int>(record.outcome()),
                                record.message(), record.detail()));
  }
  const int answered = CountFrames(replies);
  if (answered != calls + 1) {
    return Internal(fmt::format("probe program: {} frames back for {} calls", answered, calls));
  }
  return Status::Ok();
}

Status WarmUpExecutorServer(const proto::ServerConfig& config) {
  // Rounds of the sample tests the server runs before forking: enough for CPython 3.11
  // to quicken and specialize the harness's bytecode.
  constexpr int kWarmUpRounds = 16;
  InterpreterOptions interpreter;
  interpreter.preload_modules.assign(config.preload_modules().begin(),
                                     config.preload_modules().end());
  if (!config.stdlib_dir().empty()) interpreter.stdlib_dir = config.stdlib_dir();
  EGCA_RETURN_IF_ERROR(InitializeInterpreter(interpreter));
  EGCA_RETURN_IF_ERROR(WarmUpForForking([] { return ExerciseChildPath(kWarmUpRounds); }));
  // The pages a child writes when it runs the sample tests once, as a job's child would
  // (the warm interpreter's state, its allocator's pools, the stack): each spare child
  // makes its own copies of them before its job (egca/sandbox/prefault.h). Learned in a
  // fork, so the server's own memory stays as the warm-up left it; no list, no prefault.
  StatusOr<std::string> program = HarnessBytes("PROBE_PROGRAM", /*call=*/false);
  StatusOr<std::string> frames = HarnessBytes("probe_call_frames", /*call=*/true);
  if (!program.ok() || !frames.ok()) {
    return (program.ok() ? frames.status() : program.status()).WithContext("executor warm-up");
  }
  sandbox::SetSparePrefault(sandbox::ProbeWrittenPages([&] {
    PyOS_AfterFork_Child();
    if (!ExerciseChildPath(1).ok()) return false;
    // A candidate side that did not answer every call (a test checks that it does)
    // leaves part of its pages out: the rest are still worth prefaulting.
    (void)ExerciseCandidateRole(*program, *frames);
    return true;
  }));
  return Status::Ok();
}

int ExecutorChildMain(std::string_view payload, int result_fd) {
  PyOS_AfterFork_Child();
  proto::ExecRequest request;
  if (!request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return 71;
  if (request.role() == proto::ASSERT_ROLE_TEST_SESSION) return TestSessionMain();
  // The completion key lives on this stack frame only: the payload (this process's copy
  // of the server's buffer) and the parsed field are erased before the candidate runs.
  const uint64_t key = request.completion_key();
  request.clear_completion_key();
  explicit_bzero(const_cast<char*>(payload.data()), payload.size());
  bool channel_ok = true;
  // A record, and the trace (serialized straight from the recorder) as its field `trace`.
  auto write_frame = [&](const proto::ExecResult& record, const std::string& trace) {
    std::string bytes, frame;
    if (!record.SerializeToString(&bytes)) {
      channel_ok = false;
      return;
    }
    if (!trace.empty()) AppendTraceField(trace, &bytes);
    AppendResultFrame(bytes, &frame);
    channel_ok = WriteAll(result_fd, frame) && channel_ok;
  };
  // The preparation record goes out before the candidate runs: the parent believes a test
  // error only from it.
  bool test_error = false;
  std::string trace;
  proto::ExecResult result = RunRequestInProcess(
      request,
      [&](const proto::ExecResult& prepared) {
        test_error = prepared.outcome() == proto::EXEC_TEST_ERROR;
        write_frame(prepared, {});
      },
      &trace,
      [&](const proto::ExecResult& verdict) {
        // Committed before the traced second run: a limit hit during it costs the trace only.
        FlushStream("stderr");
        FlushStream("stdout");
        proto::ExecResult keyed = verdict;
        keyed.set_completion_key(key);
        write_frame(keyed, {});
      });
  FlushStream("stderr");
  FlushStream("stdout");
  if (result.retrace_follows()) {
    proto::ExecResult tail;
    tail.set_completion_key(key);
    write_frame(tail, trace);
  } else if (!test_error) {
    result.set_completion_key(key);
    write_frame(result, trace);
  }
  return channel_ok ? 0 : 73;
}

}  // namespace egca::tracer
