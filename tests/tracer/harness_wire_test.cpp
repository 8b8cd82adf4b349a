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
for value in [Anything(), [Anything()], {1: Anything()}, len, int, (x for x in [Anything()])]:
    try:
        wire = _encode_result(value)
        sent.append(value)
    except _NotPlain:
        pass
gen, objs = _encode_result(x * x for x in range(3))
result = "ok" if not sent and gen == ["it", [["i", "0x0"], ["i", "0x1"], ["i", "0x4"]]] and objs == [] else "sent: %r %r" % (sent, gen)
)"),
            "ok");
}

// The object table (harness.py, "Objects whose identity matters"): a graph of the test's
// own objects crosses with its cycles and sharing, the candidate's in-place changes and new
// objects come back into the test's own objects, and nothing else is accepted.
constexpr const char* kGraphRoundTrip = R"(
import json
class Node:
    __module__ = "__test__"  # as the test code's classes are
    def __init__(self, value, successor=None, successors=[]):
        self.value = value
        self.successor = successor
        self.successors = successors

def test_side():
    global _TestSide
    _TestSide.graph = _Graph(1)
    _TestSide.new_classes = []

def send(args):
    enc = _Encoder(_TestSide.graph, _test_kind_of, _test_inline, False)
    wire = [enc.value(a) for a in args]
    enc.drain()
    return json.loads(_json_dumps({"args": wire, "objs": enc.entries,
                                   "classes": _TestSide.new_classes}))

class Candidate:  # the candidate process's side, in the same interpreter for the test
    def __init__(self):
        self.graph = _Graph(-1)
    def receive(self, frame):
        _mirror_sources["Node"] = "class Node:\n    pass"
        for key, qualname in frame["classes"]:
            if key not in self.graph.classes:
                _mirror_class(self.graph, key, qualname)
        self.received = _apply_entries(self.graph, frame["objs"],
                                       lambda key: _object_new(self.graph.classes[key]), [])
        for wid, _k, _c, body in frame["objs"]:
            self.graph.last[wid] = body
        return [_from_wire(a, 0, [], self.graph) for a in frame["args"]]
    def reply(self, value):
        wire, objs = _encode_result(value, self.graph, self.received)
        return json.loads(_json_dumps({"value": wire, "objs": objs}))

def take(reply):
    _apply_entries(_TestSide.graph, reply["objs"], _test_new_object, _handle_for)
    return _from_wire(reply["value"], 0, _handle_for, _TestSide.graph)
)";

TEST(HarnessWire, ObjectGraphsCrossByValueResult) {
  std::string code = std::string(kGraphRoundTrip) + R"(
problems = []
test_side()
# A 3-node list with a cycle, sharing the default `successors` list.
n1 = Node(1); n2 = Node(2, n1); n3 = Node(3, n2)
n1.successor = n3
c = Candidate()
(head,) = c.receive(send([n3]))
if type(head) is Node or type(head).__name__ != "Node":
    problems.append("not a mirror: %r" % type(head))
if head.successor.successor.successor is not head:
    problems.append("cycle lost")
if head.successors is not head.successor.successors:
    problems.append("sharing lost")
# The candidate reverses the list in place and returns the new head.
node, prev = head, None
for _ in range(3):
    nxt = node.successor
    node.successor = prev
    prev, node = node, nxt
back = take(c.reply(prev))
if back is not n1:
    problems.append("identity lost: %r" % back)
if not (n3.successor is None and n2.successor is n3 and n1.successor is n2):
    problems.append("in-place change not written back")
# An object the candidate makes comes back as the test's own class.
(head,) = c.receive(send([n1]))
made = type(head)(); made.__dict__.update(value=9)  # type(head)() works: a bare mirror
fresh = take(c.reply([made, head]))
if type(fresh[0]) is not Node or fresh[0].value != 9 or fresh[1] is not n1:
    problems.append("new object: %r" % fresh)
# A list the candidate sorts in place; only changed objects come back.
lst = [3, 1, 2]
(got,) = c.receive(send([lst]))
before = c.reply(None)
got.sort()
after = c.reply(None)
take(after)
if before["objs"] != [] or lst != [1, 2, 3]:
    problems.append("list: %r %r" % (before, lst))
result = "ok" if not problems else "; ".join(problems)
)";
  EXPECT_EQ(RunInHarness(code.c_str()), "ok");
}

TEST(HarnessWire, TheTestProcessRefusesMalformedTables) {
  std::string code = std::string(kGraphRoundTrip) + R"(
test_side()
n = Node(1)
send([n])  # the test process knows object 1 (a Node) and object 2 (its list)
bad = [
    [[5, "l", None, []]],                   # an id the candidate may not make (positive)
    [[1, "l", None, []]],                   # a Node turned into a list
    [[-1, "o", "Unknown", []]],             # a class the test never sent
    [[-1, "o", "Node", [[1, ["i", "0x1"]]]]],  # an attribute name that is not a str
    [[-1, "l", None, [["r", -7]]]],         # a reference to nothing
    [[-1, "x", None, []]],                  # an unknown kind
    [[-1, "l", None]],                      # a short entry
    "objs",
]
accepted = []
for objs in bad:
    try:
        _apply_entries(_TestSide.graph, objs, _test_new_object, _handle_for)
        accepted.append(objs)
    except (ValueError, TypeError, KeyError):
        pass
# A candidate's own class never comes back as anything but data in the test's classes.
made = []
try:
    _apply_entries(_TestSide.graph, [[-2, "o", "Node", [["value", ["i", "0x2"]]]]],
                   _test_new_object, _handle_for)
    made = [o for w, o in _TestSide.graph.objs.items() if w == -2]
except ValueError:
    pass
ok = not accepted and len(made) == 1 and type(made[0]) is Node and made[0].value == 2
result = "ok" if ok else "accepted %r made %r" % (accepted, made)
)";
  EXPECT_EQ(RunInHarness(code.c_str()), "ok");
}

}  // namespace
}  // namespace egca::tracer
