// The tracer's fast paths must not change what is recorded: the frame filter (only user
// frames in CPython's tracing mode, python_compat.h), its fallback on deep recursion, and
// the direct wire-format serializer of TakeSerializedTrace().
#include <gtest/gtest.h>

#include <Python.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "egca/tracer/trace_dump.h"
#include "trace_test_util.h"

namespace egca::tracer {
namespace {

namespace fs = std::filesystem;
using testing::RunTraced;

struct Program {
  std::string name, source, input;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The golden programs plus programs where non-user Python code (stdlib) calls back into
// user code, user generators are driven by the stdlib, and exceptions cross stdlib frames.
std::vector<Program> Programs() {
  std::vector<Program> out;
  const fs::path dir = fs::path(EGCA_SOURCE_DIR) / "tests/tracer/golden";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".py") continue;
    fs::path stdin_path = entry.path();
    stdin_path.replace_extension(".stdin");
    out.push_back({entry.path().stem().string(), Slurp(entry.path()),
                   fs::exists(stdin_path) ? Slurp(stdin_path) : ""});
  }
  out.push_back({"stdlib_callbacks",
                 "import heapq, collections, json\n"
                 "def key(v):\n"
                 "    k = -v\n"
                 "    return k\n"
                 "def gen(n):\n"
                 "    for i in range(n):\n"
                 "        yield i % 3\n"
                 "top = heapq.nlargest(2, [5, 1, 4], key=key)\n"
                 "counts = collections.Counter(gen(5))\n"
                 "def hook(d):\n"
                 "    if 'bad' in d:\n"
                 "        raise ValueError('bad')\n"
                 "    return d\n"
                 "try:\n"
                 "    json.loads('{\"bad\": 1}', object_hook=hook)\n"
                 "except ValueError as e:\n"
                 "    msg = str(e)\n"
                 "ordered = sorted([3, 1, 2], key=lambda v: (v % 2, v))\n",
                 ""});
  std::sort(out.begin(), out.end(), [](const Program& a, const Program& b) {
    return a.name < b.name;
  });
  return out;
}

TEST(TraceFastPaths, FrameFilterDoesNotChangeTheTrace) {
  TraceOptions filtered, unfiltered;
  unfiltered.frame_filter = false;
  for (const Program& p : Programs()) {
    auto a = RunTraced(p.source, p.input, filtered);
    auto b = RunTraced(p.source, p.input, unfiltered);
    EXPECT_EQ(a.error, b.error) << p.name;
    EXPECT_EQ(a.stdout_text, b.stdout_text) << p.name;
    EXPECT_GT(a.trace.events_size(), 0) << p.name;
    EXPECT_EQ(DumpTrace(a.trace), DumpTrace(b.trace)) << p.name;
  }
}

TEST(TraceFastPaths, SerializedTraceIsTheMessagesBytes) {
  for (const Program& p : Programs()) {
    std::string bytes;
    auto direct = RunTraced(p.source, p.input, TraceOptions(), &bytes);
    auto message = RunTraced(p.source, p.input, TraceOptions());
    ASSERT_FALSE(bytes.empty()) << p.name;
    // Only the wall time differs between the two runs.
    message.trace.set_traced_seconds(direct.trace.traced_seconds());
    EXPECT_EQ(message.trace.SerializeAsString(), bytes) << p.name;
    EXPECT_GT(direct.trace.event_bytes(), 0u) << p.name;
    EXPECT_EQ(direct.trace.event_bytes(), message.trace.event_bytes()) << p.name;
  }
}

TEST(TraceFastPaths, SerializedTruncatedTraceParses) {
  TraceOptions options;
  options.max_events = 7;
  std::string bytes;
  auto run = RunTraced("x = []\nfor i in range(50):\n    x.append(i)\n", "", options, &bytes);
  EXPECT_TRUE(run.trace.truncated());
  EXPECT_EQ(run.trace.events_size(), 7);
  EXPECT_EQ(run.trace.truncation(), proto::MAX_EVENTS);
}

// Non-user code whose calls to the user's function were specialized (CALL_PY_EXACT_ARGS)
// before tracing started: with the filter installed the call must still go through it and
// the user's frames be traced, not inherit the caller's untraced mode.
TEST(TraceFastPaths, SpecializedCallsFromNonUserCodeAreTraced) {
  testing::EnsurePython();
  PyObject* helper = Py_CompileString(
      "def call_many(f, n):\n"
      "    total = 0\n"
      "    for i in range(n):\n"
      "        total += f(i)\n"
      "    return total\n",
      "<harness>", Py_file_input);
  ASSERT_NE(helper, nullptr);
  PyObject* ns = PyDict_New();
  PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins());
  Py_XDECREF(PyEval_EvalCode(helper, ns, ns));
  // Warm up untraced with a non-user function until the call site is specialized.
  PyObject* warm = Py_CompileString("def ident(x):\n    return x\nfor _ in range(50):\n"
                                    "    call_many(ident, 100)\n",
                                    "<warmup>", Py_file_input);
  ASSERT_NE(warm, nullptr);
  Py_XDECREF(PyEval_EvalCode(warm, ns, ns));
  ASSERT_FALSE(PyErr_Occurred());

  const std::string user = "def g(x):\n    y = x * 2\n    return y\n";
  PyObject* code = Py_CompileString(user.c_str(), kUserFilename, Py_file_input);
  ASSERT_NE(code, nullptr);
  PyObject* module = PyImport_ImportModule(kTraceModuleName);
  TraceOptions options;
  options.enabled = true;
  ConfigureTrace(options, user);
  Py_XDECREF(PyObject_CallMethod(module, "start", "s", kUserFilename));
  Py_XDECREF(PyEval_EvalCode(code, ns, ns));  // defines g (module body traced)
  PyObject* result = PyRun_String("call_many(g, 20)", Py_eval_input, ns, ns);
  Py_XDECREF(PyObject_CallMethod(module, "stop", nullptr));
  proto::Trace trace;
  TakeTrace(&trace);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(PyLong_AsLong(result), 380);
  Py_DECREF(result);
  int g_calls = 0, g_lines = 0;
  for (const auto& e : trace.events()) {
    if (trace.code(static_cast<int>(e.code())).qualname() != "g") continue;
    g_calls += e.kind() == proto::CALL;
    g_lines += e.kind() == proto::LINE;
    EXPECT_EQ(e.depth(), 1u);  // the harness frames in between are not user frames
  }
  EXPECT_EQ(g_calls, 20);
  EXPECT_EQ(g_lines, 40);
  PyDict_Clear(ns);
  Py_DECREF(ns);
  Py_DECREF(code);
  Py_DECREF(module);
  Py_DECREF(warm);
  Py_DECREF(helper);
}

// Recursion far deeper than the filter's C-stack budget (CPython 3.11 itself needs no C
// stack for it): the filter steps aside, the run completes, and the trace is the one taken
// without the filter.
TEST(TraceFastPaths, DeepRecursionFallsBackToTracingMode) {
  const std::string src =
      "import sys\n"
      "sys.setrecursionlimit(200000)\n"
      "def depth(n):\n"
      "    if n == 0:\n"
      "        return 0\n"
      "    return 1 + depth(n - 1)\n"
      "print(depth(60000))\n";
  TraceOptions filtered, unfiltered;
  filtered.max_events = unfiltered.max_events = 1'000'000;
  filtered.max_bytes = unfiltered.max_bytes = 1ull << 30;
  unfiltered.frame_filter = false;
  auto a = RunTraced(src, "", filtered);
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.stdout_text, "60000\n");
  EXPECT_FALSE(a.trace.truncated());
  auto b = RunTraced(src, "", unfiltered);
  EXPECT_EQ(DumpTrace(a.trace), DumpTrace(b.trace));
  // Tracing works normally for the next run.
  auto c = RunTraced("def f(x):\n    return x\nf(1)\n", "", filtered);
  EXPECT_EQ(c.trace.events_size(), 7);
}

// The filter evaluates every call in its own C-level frame: the recursion limit must still
// count each Python frame once (the depth reachable before RecursionError is unchanged).
TEST(TraceFastPaths, RecursionLimitUnchanged) {
  const std::string src =
      "def depth(n):\n"
      "    if n == 0:\n"
      "        return 0\n"
      "    return 1 + depth(n - 1)\n"
      "def probe():\n"
      "    lo, hi = 1, 5000\n"
      "    while lo < hi:\n"
      "        mid = (lo + hi + 1) // 2\n"
      "        try:\n"
      "            depth(mid)\n"
      "            lo = mid\n"
      "        except RecursionError:\n"
      "            hi = mid - 1\n"
      "    return lo\n"
      "print(probe())\n";
  TraceOptions filtered, unfiltered;
  filtered.max_events = unfiltered.max_events = 2'000'000;
  filtered.max_bytes = unfiltered.max_bytes = 1ull << 30;
  unfiltered.frame_filter = false;
  auto a = RunTraced(src, "", filtered);
  auto b = RunTraced(src, "", unfiltered);
  ASSERT_EQ(a.error, "");
  EXPECT_FALSE(a.trace.truncated());
  EXPECT_EQ(a.stdout_text, b.stdout_text);
  EXPECT_GT(std::stoi(a.stdout_text), 900);  // default limit 1000, minus the callers
}

}  // namespace
}  // namespace egca::tracer
