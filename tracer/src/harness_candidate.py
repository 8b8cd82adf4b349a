# egca's harness, room "candidate": the candidate process of an assert test.
# (The harness is harness.py and its rooms, executed in order into one namespace:
# harness.HARNESS_ROOMS.)
#
# Contract. After the program ran (harness.py, run_test), _serve_calls answers the test
# process's requests on file descriptor 4 until it closes the channel: calls of the
# program's names and of handles, attribute reads and writes of handles, and, in a batch,
# {"next": 1} between two tests. Replies hold plain data only (the wire and table rooms).
# A single test's test process may end with {"retrace": 1} (its test failed, after its
# verdict was settled): _PairRetrace.asked, and harness.retrace() then replays the
# recorded frames (_PairRecording) into a fresh run of the program, traced.
# The program shares this process and may tamper with everything here: the test process
# trusts nothing it receives beyond plain data, and the executor decides the verdict.

# -- candidate process

_last_candidate_exception = []
_handles = []        # objects the program's classes made for the test process, by index
_handle_index = {}   # id(object) -> its index in _handles
_mirror_ns = {"__name__": "__test__", "__builtins__": _builtins}
_mirror_sources = {}  # qualified class name -> its class statement


def _handle_of(value):
    """The index of `value` as a handle, given out now if it has none."""
    index = _handle_index.get(_id(value))
    if index is not None and _handles[index] is value:
        return index
    if _len(_handles) >= _MAX_HANDLES:
        return None
    _handles.append(value)
    _handle_index[_id(value)] = _len(_handles) - 1
    return _len(_handles) - 1


def _load_mirror_module(statements):
    """The test code's imports and class statements (from _mirror_module), run once."""
    for qualname, source in statements:
        if qualname is None:
            try:
                _exec(_compile(source, _MIRROR_FILENAME, "exec", dont_inherit=True), _mirror_ns)
            except _Exception:
                pass
        else:
            _mirror_sources[qualname] = source


def _mirror_class(graph, key, qualname):
    """A class standing for the test's class `qualname` in this process: its class
    statement run in a copy of the mirror namespace (a top-level class also joins the
    namespace, for classes that name it), or a bare class of that name when there is none
    or it cannot make plain objects with a __dict__."""
    name = qualname.rpartition(".")[2]
    cls = None
    source = _mirror_sources.get(qualname)
    if source is not None:
        ns = _dict(_mirror_ns)
        try:
            _exec(_compile(source, _MIRROR_FILENAME, "exec", dont_inherit=True), ns)
            cls = ns.get(name)
            _object_getattribute(_object_new(cls), "__dict__")
            if "." not in qualname:
                _mirror_ns[name] = cls
        except _Exception:
            cls = None
    if not _isinstance(cls, _type):
        cls = _type(name, (), {"__module__": "__test__"})
    graph.classes[key] = cls
    graph.key_of[_id(cls)] = key


def _candidate_kind_of(graph):
    def kind_of(v):
        if _isinstance(v, _list):
            return "l"
        if _isinstance(v, _dict):
            return "d"
        if _isinstance(v, _set):
            return "S"
        if _id(_type(v)) in graph.key_of:
            return "o"
        return None
    return kind_of


def _candidate_inline(v):
    # A program object the test process holds a handle for goes back as that handle.
    index = _handle_index.get(_id(v))
    if index is not None and _handles[index] is v:
        return ["h", index]
    return None


def _encode_result(value, graph=None, received=()):
    """The candidate's reply: (value on the wire, table entries). Iterators are consumed
    here; the objects the call received are sent again if they changed."""
    if not received:
        # A scalar that crosses bare, and no object to send back: the value is the wire.
        t = _type(value)
        if (t is _float or t is _bool or value is None
                or (t is _int and -_BARE_INT < value < _BARE_INT)
                or (t is _str and _len(value) <= _MAX_FRAME)):
            return value, []
    if graph is None:
        graph = _Graph(-1)
    enc = _candidate_encoder(graph)
    if _is_iterator(value):
        items = []
        for item in value:
            if _len(items) >= _MAX_ITEMS:
                raise _NotPlain("an iterator of more than %d items" % _MAX_ITEMS)
            items.append(enc.value(item, 1))
        wire = ["it", items]
    else:
        wire = enc.value(value)
    for wid in received:
        obj = graph.objs.get(wid, _NOTHING)
        if obj is not _NOTHING:
            enc.ref(obj, _kind_of_target(obj))
    enc.drain()
    return wire, enc.entries


class _Handle:
    """Test process: an object held by the candidate process (made by a class of the
    program). Equal only to itself; it can be passed back to the candidate, and its
    attributes read, set and called there (MBPP's set-up code builds trees of the
    program's Node this way)."""
    __slots__ = ("index",)

    def __init__(self, index):
        _object_setattr(self, "index", index)

    def __repr__(self):
        return "<object #%d of the candidate process>" % self.index

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _ask_candidate({"getattr": [self.index, name]}, (), {})

    def __setattr__(self, name, value):
        _ask_candidate({"setattr": [self.index, name]}, (value,), {})

    def __call__(self, *args, **kwargs):
        return _ask_candidate({"call_handle": self.index}, args, kwargs)


_handle_objects = {}  # test process: index -> its one _Handle


def _handle_for(index):
    handle = _handle_objects.get(index)
    if handle is None:
        handle = _handle_objects[index] = _Handle(index)
    return handle


_BUILTIN_NAMES = {_id(v): k for k, v in _BUILTINS_SNAPSHOT.items() if not k.startswith("_")}


def _describe_namespace(namespace):
    """What the test process may see of the program's names: every callable (functions,
    classes, builtins it rebound, callable objects) as a name to call here, plain values
    as values (up to half a frame in all), and stdlib modules imported under their own
    name. Sent as soon as the program ran. The test process takes only the names its code
    reads, and a builtin's name only for the function under test (_function_under_test:
    a program's own `abs` does not replace the builtin there)."""
    callables = []
    values = {}
    budget = _MAX_FRAME // 2
    for name, value in _list(namespace.items()):
        if _type(name) is not _str or name.startswith("__"):
            continue
        if _isinstance(value, _ModuleType):
            module = _getattr(value, "__name__", None)
            if module == name and _type(module) is _str and module in _stdlib_names:
                values[name] = ["mod", module]
            continue
        if _callable(value):
            callables.append(name)
            continue
        try:
            wire = _to_wire(_rebuild(value, 1, ()))
            size = _len(_frame_dumps(wire))
            if size <= budget:  # a huge global is left out, not the frame
                values[name] = wire
                budget -= size
        except (_NotPlain, _RecursionError, _ValueError):
            pass
    return {"ok": True, "v": _PAIR_PROTOCOL, "callables": callables, "values": values}


class _CandidateSide:
    """The candidate process's state for one test (its table and namespace)."""
    graph = None
    namespace = None
    limit = 2048


class _TestFunction:
    """Candidate process: a callable the test passed (a lambda, a function, a bound
    method, a class); calling it runs it in the test process, with the arguments sent as
    any call's are, and returns what it returned there."""
    __slots__ = ("index",)

    def __init__(self, index):
        _object_setattr(self, "index", index)

    def __repr__(self):
        return "<function #%d of the test process>" % self.index

    def __call__(self, *args, **kwargs):
        return _ask_test(self.index, args, kwargs)


_test_functions = {}  # candidate process: index -> its one _TestFunction


def _test_function_proxy(index):
    proxy = _test_functions.get(index)
    if proxy is None:
        proxy = _test_functions[index] = _TestFunction(index)
    return proxy


def _candidate_inline_all(v):
    if _type(v) is _TestFunction:
        return ["tf", v.index]
    return _candidate_inline(v)


def _candidate_encoder(graph):
    return _Encoder(graph, _candidate_kind_of(graph), _candidate_inline_all, True)


def _ask_test(index, args, kwargs):
    """Candidate process: calls the test's callable `index` in the test process (while
    the test process waits for this process's reply, it serves such calls) and returns
    what it returned. Requests of the test process's that come first (the test's function
    calls the program) are served meanwhile."""
    graph = _CandidateSide.graph
    enc = _candidate_encoder(graph)
    try:
        frame = {"cb": index, "args": [enc.value(a) for a in args],
                 "kwargs": [[k, enc.value(v)] for k, v in kwargs.items()]}
        enc.drain()
        frame["objs"] = enc.entries
        _send_frame(frame)
    except _TooLarge as exc:
        raise OverflowError(_limit_text("the arguments of this call", exc.args[0])) from None
    while True:
        frame = _recv_frame()
        if _type(frame) is _dict and "cbr" in frame:
            break
        if not _serve_one(frame):
            raise _PeerGone("the channel is closed")
    if "module" in frame:
        _load_mirror_module(frame["module"])
    for key, qualname in frame.get("classes", ()):
        _mirror_class(graph, key, qualname)
    _apply_entries(graph, frame.get("objs", []),
                   lambda key: _object_new(graph.classes[key]), _handles)
    _received(graph, frame.get("objs", []))
    reply = frame["cbr"]
    if _type(reply) is _dict and "value" in reply:
        return _from_wire(reply["value"], 0, _handles, graph)
    raised = reply.get("raised") if _type(reply) is _dict else None
    if _type(raised) is _list and _len(raised) == 2:
        cls = _BUILTINS_SNAPSHOT.get(raised[0])
        if not (_isinstance(cls, _type) and _issubclass(cls, _Exception)):
            cls = _Exception
        raise cls(raised[1])
    raise _PeerGone("a malformed reply of the test process")


def _serve_calls(namespace, limit):
    """After the program ran: answer the test process's requests until it closes the
    channel. A request is a call of a program name ("call") or of a handle
    ("call_handle"), or reads or sets an attribute of a handle ("getattr", "setattr"); it
    carries the table entries its arguments reach (and, the first time, the test's class
    statements). The reply: {"value"}, {"handle"}, {"raised"}, {"not_plain"} or {"limit"},
    with the table entries that changed ("objs"). While a call runs, the program may call
    the test's callables it got ("cb", answered by "cbr"; _ask_test)."""
    try:
        _send_frame(_describe_namespace(namespace))
    except (_PeerGone, _TooLarge):
        return
    _CandidateSide.graph = _Graph(-1)
    _CandidateSide.namespace = namespace
    _CandidateSide.limit = limit
    while True:
        try:
            frame = _recv_frame()
            if _type(frame) is _dict and _len(frame) == 1:
                if frame.get("next") == 1:
                    _next_test(namespace)
                    continue
                if frame.get("retrace") == 1 and _PairRecording.replay is None:
                    # The test failed: the graded run is over (this is not one of its
                    # frames to replay).
                    if _PairRecording.incoming:
                        _PairRecording.incoming.pop()
                    _PairRetrace.asked = True
                    return
            if not _serve_one(frame):
                return
        except (_PeerGone, _TooLarge):
            return


# A batch of a program's assert tests (docs/executor.md, "One candidate process per
# program"): the program ran once, and this process serves test after test. Between two
# tests the test process (a new test each time, which never saw the previous one) sends
# {"next": 1}; the answer is a fresh description of the program's names, as after the
# program ran. What the program itself keeps (its globals, caches, the state of its
# objects) carries over, as in MBPP's own harness, which runs all asserts of a program in
# one process. The pair's tables (objects by value-result, handles, the test's callables)
# start afresh: the new test has its own.
_served_tests = []  # per test served before the current one: _last_exception_fields()


def _last_exception_fields():
    if not _last_candidate_exception:
        return {}
    return {k: v for k, v in _last_candidate_exception[0].items()
            if k in ("error_type", "message", "line", "column", "end_line", "end_column")}


class _PairRetrace:
    """The test process asked for the failing test's retrace (a single test's pair)."""
    asked = False


def _candidate_tables_reset():
    """The candidate process's pair tables as before its first test (the retrace starts
    the program afresh and replays the graded run's frames into it)."""
    del _last_candidate_exception[:]
    del _handles[:]
    _handle_index.clear()
    _test_functions.clear()
    _mirror_ns.clear()
    _mirror_ns.update({"__name__": "__test__", "__builtins__": _builtins})
    _mirror_sources.clear()
    del _served_tests[:]
    _CandidateSide.graph = None
    _CandidateSide.namespace = None


def _next_test(namespace):
    _served_tests.append(_last_exception_fields())
    del _last_candidate_exception[:]
    _CandidateSide.graph = _Graph(-1)
    del _handles[:]
    _handle_index.clear()
    _test_functions.clear()
    _send_frame(_describe_namespace(namespace))


def _serve_one(frame):
    """One request of the test process's, answered. False when the channel is gone (or
    the frame is not a request: the test process is not one)."""
    graph = _CandidateSide.graph
    namespace = _CandidateSide.namespace
    limit = _CandidateSide.limit
    try:
        if "module" in frame:
            _load_mirror_module(frame["module"])
        for key, qualname in frame.get("classes", ()):
            _mirror_class(graph, key, qualname)
        received = _apply_entries(graph, frame.get("objs", []),
                                  lambda key: _object_new(graph.classes[key]), _handles)
        _received(graph, frame.get("objs", []))
        args = [_from_wire(a, 0, _handles, graph) for a in frame.get("args", ())]
        kwargs = {k: _from_wire(v, 0, _handles, graph) for k, v in frame.get("kwargs", ())}
        if "call" in frame:
            op, fn = "call", namespace.get(frame["call"])
            what = frame["call"]
        elif "call_handle" in frame:
            op, fn = "call", _handles[frame["call_handle"]]
            what = "object #%d" % frame["call_handle"]
        elif "getattr" in frame:
            op, (index, what) = "getattr", frame["getattr"]
            target = _handles[index]
        else:
            op, (index, what) = "setattr", frame["setattr"]
            target = _handles[index]
    except _PeerGone:
        return False
    except _Exception:
        return False  # not a request frame: the test process is not one
    value = None
    reply = None
    try:
        if op == "call" and not _callable(fn):
            reply = {"raised": ["NameError", "the program has no callable %r" % (what,)]}
        elif op == "call":
            value = fn(*args, **kwargs)
        elif op == "getattr":
            value = _getattr(target, what)
        else:
            _setattr(target, what, args[0])
    except (_SystemExit, _MemoryError, _PeerGone):
        raise
    except _BaseException as exc:
        if _PairRecording.replay is not None and _isinstance(exc, _PairRecording.stop_type):
            # The retrace reached its limit: the trace so far is the run's prefix.
            _PairRecording.stopped = True
            raise
        info = exception_result(exc, limit)
        _last_candidate_exception[:] = [info]
        reply = {"raised": [_type(exc).__name__, info.get("message", "")]}
    objs = []
    try:
        if reply is None:
            try:
                try:
                    wire, objs = _encode_result(value, graph, received)
                except _TooLarge as exc:
                    wire = None
                    reply = {"limit": _limit_text("the %s the call returned"
                                                  % _type(value).__name__, exc.args[0])}
                if reply is None:
                    reply = {"value": wire}
            except _NotPlain as exc:
                if (op == "getattr" or _isinstance(fn, _type)) and _handle_of(value) is not None:
                    # The test builds an object of the program's class (MBPP's Pair,
                    # Node) or reads one from another: it gets a handle, equal only to
                    # itself.
                    reply = {"handle": _handle_of(value)}
                    _wire, objs = _encode_result(None, graph, received)
                else:
                    reply = {"not_plain": [_type(value).__name__, _str(exc)]}
        else:
            _wire, objs = _encode_result(None, graph, received)
    except _NotPlain as exc:
        # An object the test gave holds something that is not plain data now.
        reply = {"not_plain": ["an argument", _str(exc)]}
        objs = []
    except _TooLarge as exc:
        reply = {"limit": _limit_text("an argument the call changed", exc.args[0])}
        objs = []
    reply["objs"] = objs
    try:
        _send_frame(reply)
    except _TooLarge as exc:
        try:
            _send_frame({"limit": _limit_text("the %s the call returned"
                                              % _type(value).__name__, exc.args[0]),
                         "objs": []})
        except (_PeerGone, _TooLarge):
            return False
    except _PeerGone:
        return False
    return True
