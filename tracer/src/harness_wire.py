# egca's harness, room "wire": the two processes of an assert test, frames and values.
# (The harness is harness.py and its rooms, executed in order into one namespace:
# harness.HARNESS_ROOMS. Each room uses the names of the rooms before it.)
#
# Contract. _send_frame / _recv_frame move one frame over the socket to the other process
# (file descriptor 4): a 4-byte big-endian length, then ASCII JSON, at most _MAX_FRAME
# bytes either way (_TooLarge before sending more, _PeerGone when the peer is gone or
# sends anything else). _to_wire / _from_wire encode and strictly decode plain values:
# anything malformed is a ValueError, never an object of a type the sender chose, and
# nesting is bounded by _MAX_DEPTH. State: the namedtuple classes met (_nt_classes),
# emptied by session_reset; in a candidate process whose failure may be retraced, the
# frames of the graded run (_PairRecording: what came in, a digest of what went out) and,
# in the retrace, their replay: _recv_frame gives the recorded frames back in order and
# _send_frame checks that each reply is the one the graded run sent (a reply that is not
# marks the replay diverged and ends it as a closed channel would).

# ---- Assert tests in two processes ---------------------------------------------------------
#
# For an assert test without classes of its own (HumanEval's check, MBPP's asserts) the
# executor runs two sandboxed children connected by a socket (file descriptor 4): the
# candidate process runs the program and then serves calls; the test process runs the
# test code, in which every callable of the program is a proxy that sends the call to the
# candidate process and gets back a plain value (or the description of an exception), in
# a canonical encoding it decodes strictly. No object of the candidate's, and nothing of
# its process, reaches the test process: the verdict comes from a process that never ran
# candidate code. The candidate process never sees the test code.
#
# Frames: 4-byte big-endian length, then UTF-8 JSON. Values: null, true, false, a JSON
# string (a str), a JSON number (an int when it has no fraction or exponent, else a float:
# repr's digits, NaN, Infinity, -Infinity; the encoder writes ints of up to 63 bits this
# way), or [tag, ...]: ["i", hex] int (any size), ["f", float.hex()] float, ["c", re, im]
# complex, ["s", str], ["b", hex] bytes, ["l", [...]] list, ["t", [...]] tuple,
# ["S", [...]] set, ["F", [...]] frozenset, ["d", [[k, v], ...]] dict, ["it", [...]] an
# iterator (the candidate side consumes it, at most _MAX_ITEMS items). JSON keeps int,
# float and bool apart (1, 1.0, true), and -0.0, so a bare scalar decodes to exactly the
# value sent; nothing compares wire values with == (1 == 1.0 == true), see _same_wire.

_PEER_FD = 4
# Version of the protocol between the two processes (in the candidate's first frame; the
# test process refuses another). 2: callables of the test as handles back into the test
# process ("tf", "cb"/"cbr"), namedtuples ("nt"), limits replies ("limit"). 3: bare JSON
# scalars (str, int, float).
_PAIR_PROTOCOL = 3
# One message between the processes, either way. Containers and iterators have no count
# of their own below this (any count that fits in a frame crosses, both ways); a sender
# checks the size before sending, so a receiver never has to refuse a frame its peer
# was allowed to send.
_MAX_FRAME = 16 << 20
_MAX_ITEMS = _MAX_FRAME // 4  # no encoded item is shorter than 4 bytes with its comma
_MAX_HANDLES = 1 << 20
_MAX_DEPTH = 100
# Ints in (-_BARE_INT, _BARE_INT) cross as JSON numbers, bigger ones as ["i", hex] (decimal
# conversion of a huge int is slow and limited to 4300 digits).
_BARE_INT = 1 << 63
_NoneType = _type(None)
_BARE_TYPES = _frozenset((_str, _int, _float, _bool, _NoneType))  # what JSON decodes to
_INT_BOOL = _frozenset((_int, _bool))
_STR_ONLY = _frozenset((_str,))
_map = map
_min = min
_all = all
_is = __import__("operator").is_
_os_read = _os.read
_os_write = _os.write
_json_dumps = _json.JSONEncoder(ensure_ascii=True, check_circular=False,
                                separators=(",", ":")).encode
_json_encoder = _json.encoder
_json_join = "".join
try:
    # The C encoder _json_dumps makes on every call, made once (the same output: ASCII,
    # no spaces, floats by repr with NaN / Infinity, no circularity check).
    _c_encode = _json_encoder.c_make_encoder(
        None, _json.JSONEncoder().default, _json_encoder.encode_basestring_ascii, None,
        ":", ",", False, False, True)
except (AttributeError, TypeError):
    _c_encode = None
try:
    # The C scanner json.loads runs, without its two whitespace matches (a frame has none;
    # anything it does not take whole goes through json.loads, which decides as before).
    _c_scan = _json.scanner.c_make_scanner(_json.decoder.JSONDecoder())
except (AttributeError, TypeError):
    _c_scan = None


def _frame_dumps(obj):
    if _c_encode is not None:
        return _json_join(_c_encode(obj, 0))
    return _json_dumps(obj)


def _frame_loads(text):
    if _c_scan is not None:
        try:
            obj, end = _c_scan(text, 0)
            if end == _len(text):
                return obj
        except StopIteration:
            pass
    return _json_loads(text)


_float_hex = _float.hex
_float_fromhex = _float.fromhex
_int_to_bytes = _int.to_bytes
_bytes_fromhex = bytes.fromhex
_stdlib_names = _frozenset(_getattr(_sys, "stdlib_module_names", ()))


class _PeerGone(_Exception):
    """The other process closed the channel (or sent something that is not a frame)."""


class _TooLarge(_Exception):
    """A message over _MAX_FRAME bytes: not sent (the limit, reported as such)."""


def _limit_text(what, size):
    return ("%s takes %d bytes between the test and the candidate process, over the "
            "limit of %d bytes per message" % (what, size, _MAX_FRAME))


class _PairRecording:
    """The candidate process's frames of a graded run that may be replayed, traced, in the
    same process (a failure the test process reports: docs/executor.md, "Retracing a
    failing assert test in its own candidate process"). `incoming`: the bodies received, in
    order; `outgoing`: a digest of each frame sent. Recording stops (`incoming` None, no
    replay) past _MAX_RECORDED bytes. `replay`: while the retrace runs, the position in
    `incoming` and `outgoing`; `diverged`: the retrace sent a frame the graded run did not."""
    incoming = None
    outgoing = None
    size = 0
    replay = None
    replay_out = 0
    diverged = False
    # The tracer's TraceStopped (the retrace reached its event cap or time budget: a
    # prefix of the run, not a divergence) and whether it was raised.
    stop_type = ()
    stopped = False


_MAX_RECORDED = 8 << 20
_crc32 = __import__("zlib").crc32


def _pair_recording_reset(record):
    """A graded run: record its frames (`record`) or not, and no replay."""
    _PairRecording.incoming = [] if record else None
    _PairRecording.outgoing = [] if record else None
    _PairRecording.size = 0
    _pair_replay_at(None, ())


def _pair_replay_at(position, stop_type):
    """The replay's start (`position` 0; None: no replay) and the tracer's TraceStopped."""
    _PairRecording.replay = position
    _PairRecording.replay_out = 0
    _PairRecording.diverged = False
    _PairRecording.stopped = False
    _PairRecording.stop_type = stop_type


def _send_frame(obj):
    data = _frame_dumps(obj).encode("ascii")
    size = _len(data)
    if size > _MAX_FRAME:
        raise _TooLarge(size)
    if _PairRecording.replay is not None:
        # The retrace: nothing goes out; a frame other than the graded run's ends it.
        k = _PairRecording.replay_out
        out = _PairRecording.outgoing
        if k >= _len(out) or out[k] != (size, _crc32(data)):
            _PairRecording.diverged = True
            _PairRecording.replay = _len(_PairRecording.incoming)
            raise _PeerGone("the replay diverged")
        _PairRecording.replay_out = k + 1
        return
    if _PairRecording.outgoing is not None:
        _PairRecording.outgoing.append((size, _crc32(data)))
    data = size.to_bytes(4, "big") + data
    try:
        written = _os_write(_PEER_FD, data)
        if written < size + 4:
            view = memoryview(data)[written:]
            while view:
                view = view[_os_write(_PEER_FD, view):]
    except OSError:
        raise _PeerGone("the channel is closed") from None


_inbox = bytearray()  # bytes read from the peer and not yet taken


def _read_exact(n):
    # A frame (length and body sent in one write) usually comes in one read.
    while _len(_inbox) < n:
        try:
            chunk = _os_read(_PEER_FD, _max(n - _len(_inbox), 1 << 16))
        except OSError:
            chunk = b""
        if not chunk:
            raise _PeerGone("the channel is closed")
        _inbox.extend(chunk)
    data = bytes(_inbox[:n])
    del _inbox[:n]
    return data


def _recv_frame():
    if _PairRecording.replay is not None:
        k = _PairRecording.replay
        if k >= _len(_PairRecording.incoming):
            raise _PeerGone("the channel is closed")
        _PairRecording.replay = k + 1
        return _frame_loads(_PairRecording.incoming[k].decode("ascii"))
    body = None
    if not _inbox:
        # The usual case: one read brings one whole frame.
        try:
            chunk = _os_read(_PEER_FD, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            raise _PeerGone("the channel is closed")
        if _len(chunk) >= 4:
            size = _int.from_bytes(chunk[:4], "big")
            if size > _MAX_FRAME:
                raise _PeerGone("a frame of %d bytes" % size)
            if _len(chunk) == size + 4:
                body = chunk[4:]
        if body is None:
            _inbox.extend(chunk)
    if body is None:
        size = _int.from_bytes(_read_exact(4), "big")
        if size > _MAX_FRAME:
            raise _PeerGone("a frame of %d bytes" % size)
        body = _read_exact(size)
    if _PairRecording.incoming is not None:
        _PairRecording.size += _len(body)
        if _PairRecording.size > _MAX_RECORDED:
            _PairRecording.incoming = None  # too much to keep: a failure is retraced anew
        else:
            _PairRecording.incoming.append(body)
    try:
        return _frame_loads(body.decode("ascii"))
    except (_ValueError, _RecursionError):
        raise _PeerGone("a frame that is not JSON") from None


_NOTHING = object()  # no value (None is one)


def _scalar_wire(value):
    """A scalar of an exact plain type on the wire (None, bool, int, float, str, bytes,
    complex), or _NOTHING for anything else."""
    t = _type(value)
    if t is _str or t is _float or value is None or t is _bool:
        return value
    if t is _int:
        return value if -_BARE_INT < value < _BARE_INT else ["i", hex(value)]
    if t is bytes:
        return ["b", value.hex()]
    if t is complex:
        return ["c", _float_hex(value.real), _float_hex(value.imag)]
    return _NOTHING


def _bare_items(items):
    """The items of an exact list or tuple as a wire body when every one is a scalar that
    crosses bare (float, bool, None; ints of up to 63 bits; strs within a frame), else None
    (the caller encodes them one by one)."""
    types = _set(_map(_type, items))
    if not types <= _BARE_TYPES:
        return None
    if _int in types:
        ints = items if types <= _INT_BOOL else [x for x in items if _type(x) is _int]
        if not (-_BARE_INT < _min(ints) and _max(ints) < _BARE_INT):
            return None
    if _str in types:
        strs = items if types == _STR_ONLY else [x for x in items if _type(x) is _str]
        if _max(_map(_len, strs)) > _MAX_FRAME:
            return None
    return _list(items)


def _bare_body(body):
    """A decoded wire body (a list) whose items are all bare scalars, as the list of their
    values (each is exactly the value it stands for); None otherwise."""
    if _set(_map(_type, body)) <= _BARE_TYPES:
        return _list(body)
    return None


def _same_wire(a, b):
    """Whether two wire trees are the same encoding: by their JSON text, since == on the
    trees would take 1, 1.0 and true (or 0.0 and -0.0) for one another."""
    if a is None or b is None:
        return a is b
    return _frame_dumps(a) == _frame_dumps(b)


def _to_wire(value, depth=0):
    """`value` as _rebuild made it (plain types only, exactly), as a tree: the program's
    global values in the candidate process's first frame (_describe_namespace)."""
    if depth > _MAX_DEPTH:
        raise _NotPlain("nested deeper than %d" % _MAX_DEPTH)
    wire = _scalar_wire(value)
    if wire is not _NOTHING:
        return wire
    t = _type(value)
    if t is _list or t is _tuple:
        items = _bare_items(value)
        if items is not None:
            return ["l" if t is _list else "t", items]
    if t is _list:
        return ["l", [_to_wire(v, depth + 1) for v in value]]
    if t is _tuple:
        return ["t", [_to_wire(v, depth + 1) for v in value]]
    if t is _set:
        return ["S", [_to_wire(v, depth + 1) for v in value]]
    if t is _frozenset:
        return ["F", [_to_wire(v, depth + 1) for v in value]]
    if t is _dict:
        return ["d", [[_to_wire(k, depth + 1), _to_wire(v, depth + 1)] for k, v in value.items()]]
    raise _NotPlain(t.__name__)


_nt_classes = {}  # (typename, fields) -> the namedtuple class that stands for it here
_keyword = None


def _namedtuple_class(typename, fields):
    """The namedtuple class for (typename, fields) in this process: the one this process
    sent under that name, else one made here (collections.namedtuple checks that every
    name is an identifier and no keyword; nothing of the peer's runs)."""
    key = (typename, fields)
    cls = _nt_classes.get(key)
    if cls is None:
        global _keyword
        if _keyword is None:
            import keyword as _keyword
        for name in (typename,) + fields:
            if (not name.isidentifier() or _keyword.iskeyword(name) or name.startswith("_")
                    or _len(name) > 200):
                raise _ValueError("a namedtuple name that is not an identifier")
        if _len(_set(fields)) != _len(fields) or _len(fields) > 1000:
            raise _ValueError("malformed namedtuple fields")
        from collections import namedtuple
        cls = namedtuple(typename, fields, module="__test__")
        _nt_classes[key] = cls
    return cls


def _namedtuple_fields(t):
    """(typename, fields) when `t` is a namedtuple class (a tuple subclass with _fields
    naming each item), else None. Read with type's own getattr: in the test process `t`
    is a class of the test's or one made by _namedtuple_class."""
    try:
        fields = _type.__getattribute__(t, "_fields")
        name = _type.__getattribute__(t, "__name__")
    except _Exception:
        return None
    if (_type(fields) is not _tuple or _type(name) is not _str
            or not all(_type(f) is _str for f in fields)):
        return None
    return name, fields


def _namedtuple_from_wire(body, depth, handles, graph):
    if (_type(body) is not _list or _len(body) != 3 or _type(body[0]) is not _str
            or _type(body[1]) is not _list or _type(body[2]) is not _list
            or _len(body[1]) != _len(body[2]) or not all(_type(f) is _str for f in body[1])):
        raise _ValueError("a malformed namedtuple")
    cls = _namedtuple_class(body[0], _tuple(body[1]))
    return _tuple.__new__(cls, [_from_wire(v, depth + 1, handles, graph) for v in body[2]])


def _tf_from_wire(index, handles):
    if _type(handles) is _list:  # the candidate process: a proxy that calls back
        return _test_function_proxy(index)
    if handles is not None and index < _len(_callbacks):  # the test process: its own
        return _callbacks[index]
    raise _ValueError("a callable of the test's that it did not give")


def _from_wire(node, depth=0, handles=None, graph=None):
    """Strict inverse of _to_wire for data from the other process: anything else is a
    ValueError (never an object of a type the sender chose). `handles` (the candidate
    process decoding the test process's arguments) allows builtins and handles; the test
    process passes _handle_for instead, for handles the candidate process sends back.
    `graph` allows references (["r", id]) to the objects of that table."""
    if depth > _MAX_DEPTH:
        raise _ValueError("nested deeper than %d" % _MAX_DEPTH)
    t = _type(node)
    if t is _str or t is _int or t is _float or node is None or t is _bool:
        return node  # a bare scalar: JSON decoded it to exactly its type
    if t is not _list or not node or _type(node[0]) is not _str:
        raise _ValueError("not an encoded value")
    tag = node[0]
    if tag == "c" and _len(node) == 3 and _type(node[1]) is _str and _type(node[2]) is _str:
        return complex(_float_fromhex(node[1]), _float_fromhex(node[2]))
    if _len(node) != 2:
        raise _ValueError("bad arity for %r" % tag)
    body = node[1]
    if graph is not None and tag == "r" and _type(body) is _int:
        obj = graph.objs.get(body, _NOTHING)
        if obj is _NOTHING:
            raise _ValueError("a reference to no object")
        return obj
    if _type(handles) is _list:
        if tag == "bi" and _type(body) is _str and body in _BUILTINS_SNAPSHOT:
            return _BUILTINS_SNAPSHOT[body]
        if tag == "h" and _type(body) is _int and 0 <= body < _len(handles):
            return handles[body]
    elif handles is not None and tag == "h" and _type(body) is _int and 0 <= body < _MAX_HANDLES:
        return handles(body)
    if tag == "tf" and _type(body) is _int and 0 <= body < _MAX_HANDLES:
        # A callable of the test's: the candidate process calls it back there.
        return _tf_from_wire(body, handles)
    if tag == "nt":
        return _namedtuple_from_wire(body, depth, handles, graph)
    if tag in ("i", "f", "s", "b"):
        if _type(body) is not _str:
            raise _ValueError("bad %r payload" % tag)
        if tag == "i":
            return _int(body, 16)
        if tag == "f":
            return _float_fromhex(body)
        if tag == "s":
            return body
        return _bytes_fromhex(body)
    if _type(body) is not _list or _len(body) > _MAX_ITEMS:
        raise _ValueError("bad %r payload" % tag)
    d = depth + 1
    if tag == "l" or tag == "it" or tag == "t":
        items = _bare_body(body) if d <= _MAX_DEPTH else None
        if items is None:
            items = [_from_wire(v, d, handles, graph) for v in body]
        return items if tag == "l" else iter(items) if tag == "it" else _tuple(items)
    if tag == "S":
        return {_from_wire(v, d, handles, graph) for v in body}
    if tag == "F":
        return _frozenset(_from_wire(v, d, handles, graph) for v in body)
    if tag == "d":
        out = {}
        for pair in body:
            if _type(pair) is not _list or _len(pair) != 2:
                raise _ValueError("bad dict entry")
            out[_from_wire(pair[0], d, handles, graph)] = _from_wire(pair[1], d, handles, graph)
        return out
    raise _ValueError("unknown tag %r" % tag)
