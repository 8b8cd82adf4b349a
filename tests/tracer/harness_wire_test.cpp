// The canonical plain-value encoding between an assert test's candidate process and its
// test process (harness.py, "Assert tests in two processes"): what the candidate can send
// decodes to exactly the plain value it encodes, and anything else is refused.
#include <gtest/gtest.h>

#include <string>

#include "helpers/embedded_python.h"
#include "python_runtime.h"

namespace egca::tracer {
namespace {

// Runs `code` in a copy of the harness module's namespace; returns its `result` (str).
std::string RunInHarness(const char* code) {
  testing::EnsureEmbeddedPython();
  PyObject* globals = PyFunction_GetGlobals(HarnessRunTest());  // Borrowed.
  PyRef ns = PyRef::Steal(PyDict_Copy(globals));
  PyRef done = PyRef::Steal(PyRun_String(code, Py_file_input, ns.get(), ns.get()));
  if (!done) return "python error: " + FetchPythonError();
  PyObject* result = PyDict_GetItemString(ns.get(), "result");  // Borrowed.
  if (result == nullptr || !PyUnicode_Check(result)) return "no result";
  return PyUnicode_AsUTF8(result);
}

TEST(HarnessWire, PlainValuesRoundTripExactly) {
  EXPECT_EQ(RunInHarness(R"(
import json
def round_trip(v):
    return _from_wire(json.loads(_json_dumps(_to_wire(_rebuild(v, 1, ())))))
values = [None, True, False, 0, -2 ** 200, 1.5, -0.0, float("inf"), "x\ud800\u00e9", b"\x00\xff",
          (1, (2,)), [1, [2, "a"]], {1: "a", (2, 3): [None]}, {1, 2}, frozenset({2}), 2 - 3j,
          [[[[1]]]], "", [], {}]
bad = [v for v in values
       if round_trip(v) != v or type(round_trip(v)) is not type(v) or repr(round_trip(v)) != repr(v)]
# Subclasses arrive as their base type (no override runs on either side).
class S(str):
    def __eq__(self, other):
        return True
sub = round_trip([S("a")])
result = "ok" if not bad and type(sub[0]) is str and sub == ["a"] else "bad: %r %r" % (bad, sub)
)"),
            "ok");
}

TEST(HarnessWire, AnythingButAnEncodedValueIsRefused) {
  EXPECT_EQ(RunInHarness(R"(
refused = []
cases = [[], ["i"], ["i", 5], ["q", "x"], ["l", "x"], ["d", [[1]]], ["d", [["l", []]]],
         ["f", "zz"], ["b", "xyz"], ["c", "1", 2], {"a": 1}, "str", 5, 1.5,
         ["S", [["l", []]]], ["t", [["s", 1]]], ["bi", "len"], ["h", 0]]
deep = None
for _ in range(150):
    deep = ["l", [deep]]
cases.append(deep)
for case in cases:
    try:
        _from_wire(case)
    except (ValueError, TypeError, RecursionError, OverflowError):
        refused.append(case)
# Only the candidate process, decoding the test process's arguments, takes builtins and
# handles; and only handles it gave out.
handles = ["held"]
ok_args = _from_wire(["bi", "len"], 0, handles) is len and _from_wire(["h", 0], 0, handles) == "held"
try:
    _from_wire(["h", 1], 0, handles)
    ok_args = False
except ValueError:
    pass
result = "ok" if len(refused) == len(cases) and ok_args else "accepted: %r" % [
    c for c in cases if c not in refused]
)"),
            "ok");
}

TEST(HarnessWire, WhatTheCandidateSendsIsPlainOnly) {
  EXPECT_EQ(RunInHarness(R"(
class Anything:
    def __eq__(self, other):
        return True
sent = []
for value in [Anything(), [Anything()], len, int, (x for x in [Anything()])]:
    try:
        wire = _encode_result(value)
        sent.append(value)
    except _NotPlain:
        pass
gen = _encode_result(x * x for x in range(3))
result = "ok" if not sent and gen == ["it", [["i", "0x0"], ["i", "0x1"], ["i", "0x4"]]] else "sent: %r %r" % (sent, gen)
)"),
            "ok");
}

}  // namespace
}  // namespace egca::tracer
