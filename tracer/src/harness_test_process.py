# egca's harness, room "test process": the assert runner of an assert test in two
# processes. (The harness is harness.py and its rooms, executed in order into one
# namespace: harness.HARNESS_ROOMS.)
#
# Contract. _run_test_process runs the set-up and test code in a namespace where every
# callable of the program is a proxy (_make_proxy) that asks the candidate process
# (_ask_candidate) and decodes its reply strictly; it returns the test's outcome (ok, the
# failing assert, the exception, or "peer_gone" when the candidate process broke the
# protocol). With retrace_visible_failures in its request (a single test's pair), a failed
# test ends by telling the candidate process {"retrace": 1}, after the outcome is fixed.
# No candidate code ever runs in this process. PROBE_PROGRAM and
# probe_call_frames serve the fork server's prefault probe; _exercise_pair_codecs warms
# the codecs in the server.

# -- test process

class _CandidateRaised:
    """Marks exceptions the proxies raised on the candidate's behalf."""
    ids = set()


# Exceptions the candidate's call raised are rebuilt in the test process as the builtin
# type of that name, except the types Python's own protocols catch without the test
# saying so, where a rebuilt one could end a loop or answer a lookup for the test:
# StopIteration (next(), for, map, filter, zip, iter(f, sentinel), ... end early: an
# `all(map(candidate, cases))` would be True), StopAsyncIteration (async for),
# IndexError (iteration of an object with only __getitem__ stops at it), AttributeError
# (getattr with a default, hasattr, __getattr__), KeyError and LookupError (Mapping's
# get/__contains__, ...), GeneratorExit (a generator's close). Those, every type that is
# not an Exception (SystemExit, KeyboardInterrupt, ...) and every name that is no builtin
# exception become RuntimeError (which nothing catches implicitly), its message naming
# the original type. The verdict still shows the candidate's own exception (its process's
# record). An attribute read of a handle keeps AttributeError: that is a real lookup.
_PROTOCOL_EXCEPTIONS = _frozenset((
    "StopIteration", "StopAsyncIteration", "IndexError", "AttributeError", "KeyError",
    "LookupError", "GeneratorExit"))


def _exception_for(type_name, message, lookup=False):
    cls = _BUILTINS_SNAPSHOT.get(type_name) if _type(type_name) is _str else None
    safe = (_isinstance(cls, _type) and _issubclass(cls, _Exception)
            and not any(base.__name__ in _PROTOCOL_EXCEPTIONS for base in cls.__mro__
                        if _BUILTINS_SNAPSHOT.get(base.__name__) is base))
    if lookup and cls is AttributeError:
        safe = True
    if not safe:
        cls = RuntimeError
        message = "%s: %s" % (type_name, message)
    try:
        exc = cls(message)
    except _BaseException:
        exc = RuntimeError("%s: %s" % (type_name, message))
    _CandidateRaised.ids.add(_id(exc))
    return exc


class _TestSide:
    """The test process's table and what it has told the candidate process."""
    graph = _Graph(1)
    module = None        # the test's class statements, once computed
    module_sent = False
    prepared = None
    sent_handles = set()  # handles the test passed to the candidate process
    failed_assert = None  # an AssertionError of the test's own code in a callback


_instance_names = {}   # test process: id(class) -> (class, names its objects hold as data)


def _instance_names_of(cls):
    entry = _instance_names.get(_id(cls))
    if entry is None or entry[0] is not cls:
        entry = _instance_names[_id(cls)] = (cls, _set())
    return entry[1]


_callbacks = []        # test process: callables given to the candidate process, by index
_callback_index = {}   # id(callable) -> its index
_class_names = {}      # id(class) -> (class, every name it and its bases define)


def _callback_wire(v):
    """A callable of the test's (a lambda, a function, a bound method, a class) as a
    handle the candidate process can call back; None for anything else."""
    if not _callable(v):
        return None
    index = _callback_index.get(_id(v))
    if index is None or _callbacks[index] is not v:
        if _len(_callbacks) >= _MAX_HANDLES:
            return None
        _callbacks.append(v)
        index = _callback_index[_id(v)] = _len(_callbacks) - 1
    return ["tf", index]


def _defined_names(cls):
    entry = _class_names.get(_id(cls))
    if entry is None or entry[0] is not cls:
        names = _set()
        for base in cls.__mro__:
            names.update(_type.__getattribute__(base, "__dict__").keys())
        entry = _class_names[_id(cls)] = (cls, _frozenset(names))
    return entry[1]


def _writable(obj, name, had):
    """What a reply may write into an object of a test class: data attributes only. A
    name the class or a base defines (a method, a class constant, a property) may not be
    shadowed, unless the test's own objects of that class hold it as instance data (this
    object had it in its __dict__, or the test sent one that did: QuixBugs' Node sets
    `successor` in __init__ over a method of that name)."""
    if (not had and name in _defined_names(_type(obj))
            and name not in _instance_names_of(_type(obj))):
        raise _ValueError("attribute %r, which class %s defines"
                          % (name[:100], _type(obj).__name__))


def _handle_in_table(index):
    """A handle inside an object the reply writes: only one the test passed itself."""
    if index not in _TestSide.sent_handles:
        raise _ValueError("an object of the program's where the test passed none")
    return _handle_for(index)


def _is_test_class(t):
    """A class the test code defined (module __test__), whose objects are plain instances
    with a __dict__ (every base is such a class, or object)."""
    for base in t.__mro__:
        if base is not object and not (base.__flags__ & _heap_type_flag
                                       and base.__module__ == "__test__"):
            return False
    return t.__dictoffset__ != 0


def _test_kind_of(v):
    t = _type(v)
    if t is _list:
        return "l"
    if t is _dict:
        return "d"
    if t is _set:
        return "S"
    g = _TestSide.graph
    if _id(t) in g.key_of:
        return "o"
    if _isinstance(v, _type) or not _is_test_class(t):
        return None
    key = t.__qualname__
    n = 1
    while key in g.classes:  # another class of the same name (a class made per call)
        n += 1
        key = "%s#%d" % (t.__qualname__, n)
    g.classes[key] = t
    g.key_of[_id(t)] = key
    _TestSide.new_classes.append([key, t.__qualname__])
    return "o"


_TestSide.new_classes = []


def _test_inline(v):
    t = _type(v)
    if t is _Handle:
        _TestSide.sent_handles.add(v.index)
        return ["h", v.index]
    builtin = _BUILTIN_NAMES.get(_id(v))
    if builtin is not None and _BUILTINS_SNAPSHOT.get(builtin) is v:
        return ["bi", builtin]
    return None


def _strip_docstrings(tree):
    for node in _ast.walk(tree):
        if _type(node) in (_ast.ClassDef, _ast.FunctionDef, _ast.AsyncFunctionDef):
            body = node.body
            if (body and _type(body[0]) is _ast.Expr and _type(body[0].value) is _ast.Constant
                    and _type(body[0].value.value) is _str):
                del body[0]
            if not body:
                body.append(_ast.Pass())
    return tree


def _mirror_module(prepared):
    """The test code's (and set-up code's) top-level imports and every class statement,
    docstrings removed, as [[qualified name or None for an import, source], ...]: all the
    candidate process gets of the test code."""
    out = []

    def visit(node, prefix):
        for child in _ast.iter_child_nodes(node):
            t = _type(child)
            if t is _ast.ClassDef:
                qualname = prefix + child.name
                text = _ast.unparse(_strip_docstrings(_ast.parse(_ast.unparse(child))))
                out.append([qualname, text])
                visit(child, qualname + ".")
            elif t is _ast.FunctionDef or t is _ast.AsyncFunctionDef:
                visit(child, prefix + child.name + ".<locals>.")
            elif t is not _ast.Lambda:
                visit(child, prefix)

    request = prepared.request
    for text in (request.get("setup_code", ""), request.get("test_code", "")):
        try:
            tree = _ast.parse(text)
        except (_SyntaxError, _ValueError):
            continue
        for node in tree.body:
            if _type(node) in (_ast.Import, _ast.ImportFrom):
                out.append([None, _ast.unparse(node)])
        visit(tree, "")
    return out


def _test_new_object(key):
    cls = _TestSide.graph.classes.get(key) if _type(key) is _str else None
    if cls is None:
        raise _ValueError("an object of a class the test did not send")
    return _object_new(cls)


def _test_encoder():
    _TestSide.new_classes = []
    return _Encoder(_TestSide.graph, _test_kind_of, _test_inline, False, _callback_wire)


def _forget_new_classes():
    g = _TestSide.graph
    for key, _qualname in _TestSide.new_classes:  # not sent: forget them
        g.key_of.pop(_id(g.classes.pop(key)), None)
    _TestSide.new_classes = []


def _with_classes(frame):
    """Adds the classes the encoder met first (and, once, the test's class statements)."""
    if _TestSide.new_classes:
        frame["classes"] = _TestSide.new_classes
        if not _TestSide.module_sent:
            frame["module"] = _mirror_module(_TestSide.prepared)
            _TestSide.module_sent = True
    return frame


def _call_frame(head, args, kwargs):
    """The frame of a request to the candidate process: `head` with the arguments and the
    table entries they reach."""
    bare = _bare_items(args) if not kwargs else None
    if bare is not None:
        # Scalars that cross bare only: no object, no class, nothing for the encoder.
        _TestSide.new_classes = []
        frame = _dict(head)
        frame["args"] = bare
        frame["kwargs"] = []
        frame["objs"] = []
        return frame
    enc = _test_encoder()
    try:
        frame = _dict(head)
        frame["args"] = [enc.value(a) for a in args]
        frame["kwargs"] = [[k, enc.value(v)] for k, v in kwargs.items()]
        enc.drain()
    except _NotPlain as exc:
        _forget_new_classes()
        raise _TypeError("argument of type %s cannot be sent to the candidate process"
                         % exc) from None
    except _TooLarge as exc:
        _forget_new_classes()
        raise OverflowError(_limit_text("the arguments of this call", exc.args[0])) from None
    frame["objs"] = enc.entries
    return _with_classes(frame)


# The prefault probe's candidate process (tracer/src/child_main.cpp): a program whose
# functions return each kind of plain value, and the calls a test process would send it.
PROBE_PROGRAM = """\
import math
from collections import Counter, defaultdict
from typing import Dict, List, Optional, Tuple

LIMIT = 10
NAMES = ["a", "b"]


def add(a: int, b: int) -> int:
    \"\"\"The sum of a and b.

    >>> add(1, 2)
    3
    \"\"\"
    return a + b


def echo(x, *rest, **named):
    return x


def push(xs, x):
    xs.append(x)
    return len(xs)


def boom(x):
    raise ValueError(x)
"""


def probe_call_frames():
    """The frames (length-prefixed, as _send_frame writes them) of calls of PROBE_PROGRAM's
    functions with arguments and results of every plain kind (scalars bare and tagged,
    lists, tuples, dicts, sets, nesting, a list changed in place, keyword arguments, an
    exception), encoded by the test process's own encoder. Run in the server before the
    probe forks; leaves the test side's tables as it found them."""
    calls = [
        ("add", (1, 2)), ("add", ("a", "b")), ("add", (1.5, 2)), ("add", (True, -3)),
        ("add", ([1, "x"], [3.5, None, True, (1, 2.5)])), ("add", ((1, 2), (3,))),
        ("add", ([[1, 2], [3]], [["a"], []])), ("add", (1, "a")),
        ("echo", ({"k": [1, 2], "j": {"x": 1.0}},)), ("echo", ({1, 2, 3},)),
        ("echo", (frozenset({"a"}),)), ("echo", (None,)), ("echo", (-2 ** 70,)),
        ("echo", (b"xy",)), ("echo", (1j,)), ("echo", ("s", 2), {"key": [1]}),
        ("echo", ([(1, "a"), (2, "b")],)), ("echo", ("",)), ("echo", (0.1,)),
        ("push", ([1, 2], 3)), ("boom", ("e",)),
    ]
    saved = _TestSide.graph, _TestSide.new_classes
    _TestSide.graph = _Graph(1)
    out = []
    try:
        for call in calls:
            frame = _call_frame({"call": call[0]}, call[1], call[2] if _len(call) > 2 else {})
            data = _frame_dumps(frame).encode("ascii")
            out.append(_len(data).to_bytes(4, "big") + data)
    finally:
        _TestSide.graph, _TestSide.new_classes = saved
    return b"".join(out)


def _ask_candidate(head, args, kwargs):
    """Sends a request (a call, or an attribute of a handle) with its arguments and the
    table entries they reach; returns what the reply decodes to. While it waits, the
    candidate process may call the test's callables it got (_serve_callback)."""
    g = _TestSide.graph
    frame = _call_frame(head, args, kwargs)
    try:
        _send_frame(frame)
    except _TooLarge as exc:
        raise OverflowError(_limit_text("the arguments of this call", exc.args[0])) from None
    while True:
        reply = _recv_frame()
        if _type(reply) is _dict and "cb" in reply:
            _serve_callback(reply)
            continue
        break
    if _type(reply) is not _dict or _len(reply) != 2 or "objs" not in reply:
        raise _PeerGone("a malformed reply")
    try:
        _apply_entries(g, reply["objs"], _test_new_object, _handle_in_table, _writable,
                       roots=[reply["value"]] if "value" in reply else [])
        if "value" in reply:
            return _from_wire(reply["value"], 0, _handle_for, g)
    except (_ValueError, _TypeError, _RecursionError, OverflowError, KeyError) as exc:
        raise _PeerGone("a malformed reply (%s)" % exc) from None
    if "handle" in reply:
        if _type(reply["handle"]) is not _int or not 0 <= reply["handle"] < _MAX_HANDLES:
            raise _PeerGone("a malformed handle")
        return _handle_for(reply["handle"])
    if "limit" in reply:
        if _type(reply["limit"]) is not _str:
            raise _PeerGone("a malformed reply")
        raise OverflowError(reply["limit"][:300])
    described = reply.get("raised") or reply.get("not_plain")
    if (_type(described) is not _list or _len(described) != 2
            or _type(described[0]) is not _str or _type(described[1]) is not _str):
        raise _PeerGone("a malformed reply")
    if "not_plain" in reply:
        raise _TypeError("the candidate returned a %s, not a plain value (%s)"
                         % (described[0][:100], described[1][:200]))
    raise _exception_for(described[0][:100], described[1][:2000], "getattr" in head)


def _serve_callback(frame):
    """The candidate process calls a callable the test gave it: run here, on arguments
    decoded as a reply's are (the same rules for what they write into the test's
    objects); the answer carries its value (or the exception's type and message) and the
    objects the call received, by value-result. An AssertionError of the test's own code
    fails the test even if the candidate catches it."""
    g = _TestSide.graph
    index = frame.get("cb")
    if (_type(index) is not _int or not 0 <= index < _len(_callbacks)
            or _type(frame.get("args")) is not _list or _type(frame.get("kwargs")) is not _list):
        raise _PeerGone("a call of no callable the test gave")
    try:
        roots = _list(frame["args"])
        for pair in frame["kwargs"]:
            if _type(pair) is _list and _len(pair) == 2:
                roots.append(pair[1])
        received = _apply_entries(g, frame.get("objs", []), _test_new_object,
                                  _handle_in_table, _writable, roots=roots)
        args = [_from_wire(a, 0, _handle_for, g) for a in frame["args"]]
        kwargs = {}
        for pair in frame["kwargs"]:
            if _type(pair) is not _list or _len(pair) != 2 or _type(pair[0]) is not _str:
                raise _ValueError("a malformed keyword argument")
            kwargs[pair[0]] = _from_wire(pair[1], 0, _handle_for, g)
    except (_ValueError, _TypeError, _RecursionError, OverflowError, KeyError) as exc:
        raise _PeerGone("a malformed call (%s)" % exc) from None
    answer = None
    try:
        value = _callbacks[index](*args, **kwargs)
    except _PeerGone:
        raise
    except _BaseException as exc:
        if _isinstance(exc, AssertionError) and _id(exc) not in _CandidateRaised.ids:
            if _TestSide.failed_assert is None:
                _TestSide.failed_assert = exc
        answer = {"raised": [_type(exc).__name__, _safe_str(exc)[:2000]]}
        value = None
    enc = _test_encoder()
    try:
        wire = enc.value(value)
        for wid in received:
            obj = g.objs.get(wid, _NOTHING)
            if obj is not _NOTHING:
                enc.ref(obj, _kind_of_target(obj))
        enc.drain()
        if answer is None:
            answer = {"value": wire}
    except _NotPlain as exc:
        _forget_new_classes()
        enc.entries = []
        answer = {"raised": ["TypeError", "the test's function returned a %s, which cannot "
                             "be sent to the candidate process" % exc]}
    except _TooLarge as exc:
        _forget_new_classes()
        enc.entries = []
        answer = {"raised": ["OverflowError", _limit_text(
            "the value the test's function returned", exc.args[0])]}
    frame = _with_classes({"cbr": answer, "objs": enc.entries})
    try:
        _send_frame(frame)
    except _TooLarge as exc:
        _send_frame({"cbr": {"raised": ["OverflowError", _limit_text(
            "the value the test's function returned", exc.args[0])]}, "objs": []})


def _make_proxy(name):
    def candidate(*args, **kwargs):
        return _ask_candidate({"call": name}, args, kwargs)
    candidate.__name__ = name
    return candidate

def _names_used(code):
    """Every global name the test code (and the functions it defines) may read."""
    names = _set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if _type(k) is _type(code))
    return names


def _function_under_test(prepared):
    """The one program name that may shadow a builtin in the test namespace: the entry
    point (HumanEval), else the name called in the most asserts, a builtin's name only if
    no other name is called in as many (MBPP's `assert sum(10, 15) == 6`; in
    `assert sorted(f(x)) == y` that is f). Every other program name that is a builtin's
    stays the builtin, so a program's own `abs` or `sorted` cannot decide an assert."""
    if prepared.entry_point:
        return prepared.entry_point
    counts = {}
    try:
        tree = _ast.parse(prepared.request.get("test_code", ""))
    except (_SyntaxError, _ValueError):
        return None
    for node in _ast.walk(tree):
        if _type(node) is _ast.Assert:
            called = {n.func.id for n in _ast.walk(node)
                      if _type(n) is _ast.Call and _type(n.func) is _ast.Name}
            for name in called:
                counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None
    most = _max(counts.values())
    best = _sorted(name for name, count in counts.items() if count == most)
    for name in best:
        if name not in _BUILTINS_SNAPSHOT:
            return name
    return best[0]


def _test_process_namespace(hello, shadow_ok, used):
    if _type(hello) is not _dict or hello.get("ok") is not True:
        raise _PeerGone("the program did not run")
    if hello.get("v") != _PAIR_PROTOCOL:
        raise _PeerGone("another protocol version (%r, not %d)"
                        % (hello.get("v"), _PAIR_PROTOCOL))
    ns = {"__name__": "__test__", "__builtins__": _builtins}
    callables = hello.get("callables")
    values = hello.get("values")
    if _type(callables) is not _list or _type(values) is not _dict:
        raise _PeerGone("a malformed namespace")
    for name, node in values.items():
        if (_type(name) is not _str or name not in used or name.startswith("__")
                or (name in _BUILTINS_SNAPSHOT and name != shadow_ok)):
            continue
        if _type(node) is _list and _len(node) == 2 and node[0] == "mod":
            # A stdlib module the program imported under its own name, imported here.
            if node[1] == name and name in _stdlib_names:
                try:
                    ns[name] = __import__(name)
                except _Exception:
                    pass
            continue
        try:
            ns[name] = _from_wire(node)
        except (_ValueError, _TypeError, _RecursionError, OverflowError):
            raise _PeerGone("a malformed value for %r" % name[:100]) from None
    for name in callables:
        if _type(name) is not _str:
            raise _PeerGone("a malformed name")
        if (name not in used or name.startswith("__")
                or (name in _BUILTINS_SNAPSHOT and name != shadow_ok)):
            continue
        ns[name] = _make_proxy(name)
    return ns


def _run_test_process(prepared, limit):
    """The test code against proxies of the candidate process. Returns the record."""
    capture = _Capture(b"", discard=True)
    result = None
    named = False  # the candidate process described its names (it got past its module)
    with capture:
        try:
            _TestSide.prepared = prepared
            used = _names_used(prepared.test)
            if prepared.setup is not None:
                used |= _names_used(prepared.setup)
            if prepared.request.get("continues_candidate", False):
                # A batch: the candidate process served an earlier test; it describes its
                # names again, as they are now.
                _send_frame({"next": 1})
            hello = _recv_frame()
            named = True
            ns = _test_process_namespace(hello, _function_under_test(prepared), used)
            if prepared.problem is not None:
                _exec(prepared.problem, ns)  # the problem's helpers, not the candidate's
            if prepared.setup is not None:
                _exec(prepared.setup, ns)
            _exec(prepared.test, ns)
            if _TestSide.failed_assert is not None:
                raise _TestSide.failed_assert
        except _PeerGone as exc:
            result = {"outcome": "peer_gone", "detail": "the candidate process: %s" % exc}
        except _SystemExit as exc:
            result = {"outcome": "exited",
                      "detail": "SystemExit(%s) in the test code" % _safe_repr(exc.code, 64)}
        except _BaseException as exc:
            result = exception_result(exc, limit)
            if _id(exc) in _CandidateRaised.ids:
                result["candidate_raised"] = 1
    request = prepared.request
    if (result is not None and named and request.get("retrace_visible_failures", False)
            and result.get("outcome") != "peer_gone"
            and (not result.get("candidate_raised") or request.get("retrace_exceptions", True))):
        # The test failed (its verdict no longer depends on the candidate process): the
        # candidate process runs it again, traced, from the frames it recorded.
        try:
            _send_frame({"retrace": 1})
        except (_PeerGone, _TooLarge):
            pass
    # Done with the candidate: it can finish (and exit) while this process writes its
    # record and exits, instead of after.
    try:
        _os.close(_PEER_FD)
    except OSError:
        pass
    if result is None:
        result = {"outcome": "ok"}
    if named:
        result["candidate_named"] = 1
    if "test_line" in result:
        text = _source_line(prepared.request.get("test_code", ""), result["test_line"]).strip()
        if text:
            result["detail"] = "test line %d: %s" % (result["test_line"], _bounded(text, limit))
    return result


def _exercise_pair_codecs():
    """Runs the two-process code paths that need no peer (encoding, decoding, namespace
    description, the object table both ways) in the server, so that children inherit them
    quickened. Leaves no state behind (the test process's table is made anew)."""
    sample = {"a": [1, 2.5, "x", b"y", (1, None), {3}, frozenset({4}), 1j, True], "b": -1}
    for _ in _range(64):
        wire = _to_wire(_rebuild(sample, 1, ()))
        _from_wire(_frame_loads(_frame_dumps(wire)))
        _from_wire(wire, 0, [])
        _describe_namespace({"f": _len, "v": [1, 2], "m": _math, "__name__": "__candidate__"})
        _encode_result(iter([1, 2]))
        # A call's arguments as the test process sends them, applied and answered by the
        # candidate process, and the reply applied by the test process.
        _TestSide.graph = test_graph = _Graph(1)
        enc = _Encoder(test_graph, _test_kind_of, _test_inline, False)
        args = [enc.value(a) for a in ([3, 1, 2], sample, _len)]
        enc.drain()
        frame = _frame_loads(_frame_dumps({"args": args, "objs": enc.entries}))
        graph = _Graph(-1)
        received = _apply_entries(graph, frame["objs"], None, [])
        _received(graph, frame["objs"])
        values = [_from_wire(a, 0, [], graph) for a in frame["args"]]
        _encode_result(None, graph, received)  # unchanged: nothing goes back
        values[0].sort()
        wire, objs = _encode_result(values[0], graph, received)
        reply = _frame_loads(_frame_dumps({"value": wire, "objs": objs}))
        _apply_entries(test_graph, reply["objs"], _test_new_object, _handle_for,
                       roots=[reply["value"]])
        _from_wire(reply["value"], 0, _handle_for, test_graph)
        # A call with scalars only, both ways (the proxies' fast paths).
        frame = _frame_loads(_frame_dumps({"call": "f", "args": _bare_items((3, "x", 2.5)),
                                           "kwargs": [], "objs": []}))
        values = [_from_wire(a, 0, [], graph) for a in frame["args"]]
        wire, objs = _encode_result(values[1], graph, ())
        _from_wire(_frame_loads(_frame_dumps({"value": wire, "objs": objs}))["value"], 0,
                   _handle_for, test_graph)
    _TestSide.graph = _Graph(1)
    _TestSide.new_classes = []
    code = _compile("def check(candidate):\n    assert candidate(1) == 1\n", TEST_FILENAME,
                    "exec", dont_inherit=True)
    _names_used(code)
