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
# (A bare JSON string or number is a value since protocol 3: HarnessWire.BareScalars...)
cases = [[], ["i"], ["i", 5], ["q", "x"], ["l", "x"], ["d", [[1]]], ["d", [["l", []]]],
         ["f", "zz"], ["b", "xyz"], ["c", "1", 2], {"a": 1}, ["l", [{"a": 1}]],
         ["t", [1, {}]], ["S", [["l", []]]], ["t", [["s", 1]]], ["bi", "len"], ["h", 0]]
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
result = "ok" if not sent and gen == ["it", [0, 1, 4]] and objs == [] else "sent: %r %r" % (sent, gen)
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
    return json.loads(_frame_dumps({"args": wire, "objs": enc.entries,
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
        _received(self.graph, frame["objs"])  # as _serve_one records what it received
        return [_from_wire(a, 0, [], self.graph) for a in frame["args"]]
    def reply(self, value):
        wire, objs = _encode_result(value, self.graph, self.received)
        return json.loads(_frame_dumps({"value": wire, "objs": objs}))

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

// Protocol 3: str, int (up to 63 bits) and float cross as bare JSON scalars, lists and
// tuples of them as plain JSON arrays. JSON keeps 1, 1.0 and true apart, and -0.0, nan and
// the infinities; each value must come back with exactly its type both ways (these checks
// compare types and repr, never ==, which would take 1 == 1.0 == True).
constexpr const char* kExact = R"(
import math
def exact(a, b):
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a.keys()) == list(b.keys()) and all(
            exact(k1, k2) and exact(a[k1], b[k2]) for k1, k2 in zip(a, b))
    if type(a) in (set, frozenset):
        return sorted(map(repr, a)) == sorted(map(repr, b))
    if type(a) is float:
        return repr(a) == repr(b) and math.copysign(1, a) == math.copysign(1, b)
    return repr(a) == repr(b)

SCALARS = [0, 1, -1, 7, 2 ** 62, 2 ** 63 - 1, -(2 ** 63) + 1, 2 ** 63, -(2 ** 63), 2 ** 200,
           -(2 ** 200), True, False, None, 1.0, 0.0, -0.0, float("nan"), float("inf"),
           float("-inf"), 1e300, 5e-324, 1e16, 0.1, "", "1", "1.0", "true", "null", "NaN",
           "x\ud800\u00e9\x00", b"", b"1", 1 + 0j]
CONTAINERS = [list(SCALARS), tuple(SCALARS), [1, 1.0, True], (1, 1.0, True), [True, 1, 1.0],
              [-0.0, 0.0], (-0.0,), [2 ** 63, 1], ["a", 1], ["a", "b"], [1, 2, 3], [],
              (), [[1], [1.0], [True]], ((1,), (1.0,)), {"k": 1.0, 1: True, 1.5: -0.0},
              {1.0, 2}, frozenset({True, 2.5})]
)";

TEST(HarnessWire, BareScalarsCrossWithExactlyTheirType) {
  std::string code = std::string(kExact) + std::string(kGraphRoundTrip) + R"(
problems = []
for v in SCALARS + CONTAINERS:
    # The program's globals (_to_wire), an argument (the test's encoder, the candidate's
    # decoder) and a returned value (the candidate's encoder, the test's decoder).
    if not exact(_from_wire(json.loads(_frame_dumps(_to_wire(v)))), v):
        problems.append("global %r" % (v,))
    test_side()
    c = Candidate()
    (got,) = c.receive(send([v]))
    if not exact(got, v):
        problems.append("argument %r -> %r" % (v, got))
    back = take(c.reply(got))
    if not exact(back, v):
        problems.append("returned %r -> %r" % (v, back))
    back = take(c.reply(v))  # the candidate's own object
    if not exact(back, v):
        problems.append("made %r -> %r" % (v, back))
# The proxies' own fast paths: a call with scalar arguments only and a scalar result.
test_side()
frame = json.loads(_frame_dumps({"args": _bare_items((1, 1.0, True, "s", None)), "objs": []}))
args = [_from_wire(a, 0, [], _Graph(-1)) for a in frame["args"]]
if not exact(args, [1, 1.0, True, "s", None]):
    problems.append("bare arguments %r" % args)
for v in SCALARS:
    wire, objs = _encode_result(v)
    if not exact(_from_wire(json.loads(_frame_dumps(wire)), 0, _handle_for, _Graph(1)), v) or objs:
        problems.append("bare result %r" % (v,))
# Only what may go bare goes bare: big ints, bytes and complex keep their tags.
if _bare_items([2 ** 63]) is not None or _bare_items([b"x"]) is not None or _bare_items([1j]) is not None:
    problems.append("tagged values sent bare")
if _scalar_wire(2 ** 63) != ["i", hex(2 ** 63)] or _scalar_wire(-(2 ** 63)) != ["i", hex(-(2 ** 63))]:
    problems.append("the 63-bit bound")
result = "ok" if not problems else "; ".join(problems)
)";
  EXPECT_EQ(RunInHarness(code.c_str()), "ok");
}

TEST(HarnessWire, AChangeOfTypeAloneInAnArgumentComesBack) {
  // The candidate process sends back an object the call received only if it changed.
  // Replacing 1.0 by 1 (or -0.0 by 0.0, True by 1) is a change, though the values are ==.
  std::string code = std::string(kExact) + std::string(kGraphRoundTrip) + R"(
problems = []
cases = [
    ([1.0, 2], lambda l: l.__setitem__(0, 1), [1, 2]),
    ([1, 2], lambda l: l.__setitem__(0, 1.0), [1.0, 2]),
    ([True, 2], lambda l: l.__setitem__(0, 1), [1, 2]),
    ([1, 2], lambda l: l.__setitem__(0, True), [True, 2]),
    ([-0.0], lambda l: l.__setitem__(0, 0.0), [0.0]),
    ([0.0], lambda l: l.__setitem__(0, -0.0), [-0.0]),
    ([0], lambda l: l.__setitem__(0, False), [False]),
    (["1"], lambda l: l.__setitem__(0, 1), [1]),
    ([2 ** 70], lambda l: l.__setitem__(0, float(2 ** 70)), [float(2 ** 70)]),
    ([[1.0]], lambda l: l[0].__setitem__(0, 1), [[1]]),
    ({"k": 1.0}, lambda d: d.__setitem__("k", 1), {"k": 1}),
    ({"k": -0.0}, lambda d: d.__setitem__("k", 0.0), {"k": 0.0}),
    ({1.0: "v"}, lambda d: (d.clear(), d.__setitem__(1, "v")), {1: "v"}),
    ({1.0}, lambda s: (s.clear(), s.add(1)), {1}),
    ({True}, lambda s: (s.clear(), s.add(1)), {1}),
    ([(1.0,)], lambda l: l.__setitem__(0, (1,)), [(1,)]),
    ([1, 2, 3], lambda l: l.append(4), [1, 2, 3, 4]),
    ([1, 2, 3], lambda l: l.pop(), [1, 2]),
    ([3, 1, 2], lambda l: l.sort(), [1, 2, 3]),
]
for original, change, expected in cases:
    test_side()
    c = Candidate()
    mine = original
    (got,) = c.receive(send([mine]))
    change(got)
    take(c.reply(None))
    if not exact(mine, expected):
        problems.append("%r changed to %r reads %r" % (original, expected, mine))
# Unchanged objects are not sent again (also when the same values are written back).
for original, touch in [([1, 2.5, "x", True, None], lambda l: None),
                        ([1, 2.5, "x"], lambda l: l.__setitem__(0, l[0])),
                        ([1, 2, 3], lambda l: (l.append(9), l.pop())),
                        ([[1], [2]], lambda l: None), ({"a": 1}, lambda d: None)]:
    test_side()
    c = Candidate()
    (got,) = c.receive(send([original]))
    touch(got)
    reply = c.reply(None)
    if reply["objs"] != []:
        problems.append("unchanged %r sent again: %r" % (original, reply["objs"]))
# An object changed in one call and passed again in the next: its new state counts.
test_side()
c = Candidate()
xs = [1.0, 2.0]
(got,) = c.receive(send([xs]))
got[0] = 1
take(c.reply(None))
(got,) = c.receive(send([xs]))
if not exact(got, [1, 2.0]) or c.reply(None)["objs"] != []:
    problems.append("second call %r" % (got,))
got[1] = 2
take(c.reply(None))
if not exact(xs, [1, 2]):
    problems.append("second change %r" % (xs,))
result = "ok" if not problems else "; ".join(problems)
)";
  EXPECT_EQ(RunInHarness(code.c_str()), "ok");
}

TEST(HarnessWire, FramesDecodeAsJsonLoadsDecodesThem) {
  // _frame_loads takes the C scanner's answer only for a whole frame; anything else is
  // json.loads's to accept or refuse, exactly as before.
  EXPECT_EQ(RunInHarness(R"(
import json
samples = ['{"a":1}', '{"a":1} ', ' {"a":1}', '{"a":1}x', '{"a":1}{}', '', 'x', '[1,2', '"\\ud800"',
           'NaN', '-Infinity', '[1e400, -0.0, 1E5, 10000000000000000000000]', '{"a":[1,{"b":null}]}',
           '1' * 5000, '[' * 200 + ']' * 200, '{"a":1,"a":2}', 'tru', 'nul', '"\\x"']
problems = []
for text in samples:
    try:
        want = ("ok", repr(json.loads(text)))
    except (ValueError, RecursionError) as exc:
        want = ("error", type(exc).__name__)
    try:
        got = ("ok", repr(_frame_loads(text)))
    except (ValueError, RecursionError) as exc:
        got = ("error", type(exc).__name__)
    if got != want:
        problems.append("%r: %r vs %r" % (text[:20], got, want))
for obj in [{"a": [1, 1.0, True, None, "x\ud800", -0.0, float("nan"), float("inf")]}, [], {}]:
    if _frame_dumps(obj) != _json_dumps(obj):
        problems.append("dumps %r" % obj)
result = "ok" if not problems else "; ".join(problems)
)"),
            "ok");
}

}  // namespace
}  // namespace egca::tracer
