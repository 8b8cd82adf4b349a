# egca's harness, room "table": objects whose identity matters, by value-result.
# (The harness is harness.py and its rooms, executed in order into one namespace:
# harness.HARNESS_ROOMS.)
#
# Contract. A _Graph is one process's table of the objects that crossed during one test,
# by wire id; an _Encoder encodes one message's values and the table entries they reach;
# _apply_entries writes a received message's entries into the table's objects, strictly
# (a malformed entry, an id the sender may not make, a reference to nothing, a change of
# kind, an attribute the test process refuses, or, given the message's values as roots,
# a new object nothing reaches: ValueError). No method of the sender's runs here.

# ---- Objects whose identity matters: a shared table, by value-result ----------------------
#
# Arguments may hold objects of classes the test code defines (QuixBugs' Node graphs, with
# cycles and shared lists) and lists, dicts and sets the program may change in place. Each
# such object crosses as an entry of a table both processes keep for the whole test:
# [id, kind, class, body] with kind "o" (an object of a test class; body [[attribute,
# value], ...]), "l" (list), "d" (dict; body [[key, value], ...]) or "S" (set); values
# inside refer to entries as ["r", id], so graphs of any depth and shape stay flat. The test
# process numbers its objects 1, 2, ...; the candidate process numbers the ones it makes
# -1, -2, ... Every call sends the current state of each object its arguments reach; the
# candidate process works on copies (an object of a test class becomes an instance of a
# mirror class: the class statement's source, docstrings removed, run apart from the
# program), and its reply carries every copy that changed and every object it made. The
# test process writes those into its own objects (call by value-result): an in-place change
# shows, and `reverse_linked_list(node1) == node5` compares the test's own nodes. What the
# test process makes from a reply is plain data in objects of its own classes, written
# into their __dict__ (no method of the candidate's runs; no class of the candidate's
# crosses). The candidate process sees the class statements of the test code and nothing
# else of it (docs/executor.md).

_MAX_ENTRIES = 1 << 20
_object_new = object.__new__
_object_getattribute = object.__getattribute__
_object_setattr = object.__setattr__
_list_setitem = _list.__setitem__
_list_len = _list.__len__
_dict_clear = _dict.clear
_dict_update = _dict.update
_set_clear = _set.clear
_set_update = _set.update
_MIRROR_FILENAME = "<test-class>"


class _Graph:
    """One process's table of the objects that crossed during this test, by wire id."""

    def __init__(self, step):
        self.objs = {}      # wire id -> object (kept alive: ids stay unique)
        self.wid_of = {}    # id(object) -> wire id
        self.step = step    # +1 in the test process, -1 in the candidate process
        self.next = step
        self.classes = {}   # class key -> class (the test's own, or mirrors)
        self.key_of = {}    # id(class) -> class key
        self.last = {}      # candidate process: wire id -> body last received or sent
        # Candidate process: wire id -> the body of a list received as bare scalars only,
        # which are then the list's very items: while they are (by identity), the list is
        # as the test process last sent it.
        self.bare = {}

    def add(self, obj, wid=None):
        if wid is None:
            wid = self.next
            self.next += self.step
        self.objs[wid] = obj
        self.wid_of[_id(obj)] = wid
        return wid

    def may_make(self, wid):
        """Whether the other process may introduce an object with this id."""
        return wid * self.step < 0


class _Encoder:
    """Encodes the values of one message. `kind_of(obj)` says whether an object crosses as
    a table entry ("o", "l", "d", "S") or not (None); `inline(obj)` encodes what else may
    pass (handles, builtins) or returns None. With `changed_only` (the candidate process) a
    known object is sent again only if its body differs from the last one exchanged."""

    def __init__(self, graph, kind_of, inline, changed_only, fallback=None):
        self.graph = graph
        self.kind_of = kind_of
        self.inline = inline
        self.changed_only = changed_only
        self.fallback = fallback  # what else may pass (the test's callables), or None
        self.queued = _set()
        self.queue = []
        self.entries = []

    def ref(self, obj, kind):
        g = self.graph
        wid = g.wid_of.get(_id(obj))
        if wid is None or g.objs.get(wid) is not obj:
            wid = g.add(obj)
        if wid not in self.queued:
            self.queued.add(wid)
            self.queue.append((wid, obj, kind))
        return ["r", wid]

    def value(self, v, depth=0):
        if depth > _MAX_DEPTH:
            raise _NotPlain("nested deeper than %d" % _MAX_DEPTH)
        t = _type(v)
        if t is _str:
            if _len(v) > _MAX_FRAME:
                raise _TooLarge(_len(v))  # one str over a frame: fail fast
            return v
        if t is _int:
            if -_BARE_INT < v < _BARE_INT:
                return v
        elif t is _float or v is None or t is _bool:
            return v
        elif t is _tuple:
            items = _bare_items(v)
            if items is not None:
                return ["t", items]
        wire = _scalar_wire(v)
        if wire is not _NOTHING:
            if _type(wire) is _list and _len(wire[1]) > _MAX_FRAME:
                raise _TooLarge(_len(wire[1]))  # one big int or bytes over a frame
            return wire
        if self.inline is not None:
            wire = self.inline(v)
            if wire is not None:
                return wire
        kind = self.kind_of(v)
        if kind is not None:
            return self.ref(v, kind)
        # Subclasses of the plain types, read through the base type's own methods.
        if _isinstance(v, _tuple):
            items = [self.value(x, depth + 1) for x in _tuple_iter(v)]
            t = _type(v)
            named = _namedtuple_fields(t) if t is not _tuple else None
            if named is not None and _len(named[1]) == _len(items):
                # A namedtuple crosses with its fields (the peer makes or finds its class).
                if self.graph.step > 0:
                    _nt_classes.setdefault(named, t)
                return ["nt", [named[0], _list(named[1]), items]]
            return ["t", items]
        if _isinstance(v, _frozenset):
            return ["F", [self.value(x, depth + 1) for x in _frozenset_iter(v)]]
        if _isinstance(v, _int):
            return _scalar_wire(_int_index(v))
        if _isinstance(v, _float):
            return _float_float(v)
        if _isinstance(v, _str):
            return _str_str(v)
        if _isinstance(v, bytes):
            return ["b", _bytes_bytes(v).hex()]
        if _isinstance(v, complex):
            c = _complex_complex(v)
            return ["c", _float_hex(c.real), _float_hex(c.imag)]
        if self.fallback is not None:
            wire = self.fallback(v)
            if wire is not None:
                return wire
        raise _NotPlain(_type(v).__name__)

    def body(self, obj, kind):
        if kind == "o":
            attrs = _object_getattribute(obj, "__dict__")
            if self.graph.step > 0:  # the test's own object: its names are its class's data
                _instance_names_of(_type(obj)).update(attrs.keys())
            out = []
            for name, v in _dict_items(attrs):
                if _type(name) is not _str:
                    raise _NotPlain("an attribute name that is not a str")
                out.append([name, self.value(v, 1)])
            return out
        if kind == "l":
            if _type(obj) is _list:
                items = _bare_items(obj)
                if items is not None:
                    return items
            return [self.value(v, 1) for v in _list_iter(obj)]
        if kind == "d":
            return [[self.value(k, 1), self.value(v, 1)] for k, v in _dict_items(obj)]
        return [self.value(v, 1) for v in _set_iter(obj)]

    def drain(self):
        """Encodes the bodies of the queued objects (and of those they reach)."""
        g = self.graph
        while self.queue:
            wid, obj, kind = self.queue.pop()
            if self.changed_only and kind == "l":
                bare = g.bare.get(wid)
                if (bare is not None and _list_len(obj) == _len(bare)
                        and _all(_map(_is, _list_iter(obj), bare))):
                    continue  # the same objects as received: unchanged
            body = self.body(obj, kind)
            if self.changed_only:
                if _same_wire(g.last.get(wid), body):
                    continue
                g.last[wid] = body
                g.bare.pop(wid, None)
            key = g.key_of.get(_id(_type(obj))) if kind == "o" else None
            self.entries.append([wid, kind, key, body])
            if _len(self.entries) > _MAX_ENTRIES:
                raise _NotPlain("more than %d objects" % _MAX_ENTRIES)


def _kind_of_target(obj):
    if _isinstance(obj, _list):
        return "l"
    if _isinstance(obj, _dict):
        return "d"
    if _isinstance(obj, _set):
        return "S"
    return "o"


def _wire_refs(node, out, depth=0):
    """Appends to `out` the table ids that the wire value `node` refers to (["r", id]), read
    as _from_wire reads it (a list of bare scalars refers to nothing). Malformed parts are
    skipped: decoding refuses them."""
    if depth > _MAX_DEPTH or _type(node) is not _list or _len(node) != 2:
        return
    tag, body = node
    if tag == "r":
        if _type(body) is _int:
            out.append(body)
        return
    if _type(body) is not _list:
        return
    if tag == "nt":
        if _len(body) == 3:
            _wire_refs(["t", body[2]], out, depth)
        return
    if tag in ("l", "it", "t", "S", "F"):
        if tag in ("l", "it", "t") and _set(_map(_type, body)) <= _BARE_TYPES:
            return
        for v in body:
            _wire_refs(v, out, depth + 1)
    elif tag == "d":
        for pair in body:
            if _type(pair) is _list and _len(pair) == 2:
                _wire_refs(pair[0], out, depth + 1)
                _wire_refs(pair[1], out, depth + 1)


def _body_refs(kind, body, out):
    """The table ids an entry's body refers to (see _wire_refs)."""
    if kind == "o":
        for pair in body:
            if _type(pair) is _list and _len(pair) == 2:
                _wire_refs(pair[1], out)
    elif kind == "l" or kind == "S":
        _wire_refs(["l", body], out)
    elif kind == "d":
        _wire_refs(["d", body], out)


def _check_reached(graph, entries, roots):
    """Refuses (ValueError) a message whose entries make objects that nothing reaches: not
    the message's values (`roots`), nor an object the table already held. Such objects
    would only live on as garbage in the process that decoded them (the test process is
    reused: what one sample leaves there must not starve the next one)."""
    fresh = {}
    for entry in entries:
        if _type(entry) is not _list or _len(entry) != 4 or _type(entry[3]) is not _list:
            raise _ValueError("a malformed object entry")
        if entry[0] not in graph.objs:
            fresh[entry[0]] = (entry[1], entry[3])
    if not fresh:
        return
    pending = []
    for wid, kind, _key, body in entries:
        if wid not in fresh:
            _body_refs(kind, body, pending)
    for root in roots:
        _wire_refs(root, pending)
    reached = _set()
    while pending:
        wid = pending.pop()
        if wid in fresh and wid not in reached:
            reached.add(wid)
            _body_refs(fresh[wid][0], fresh[wid][1], pending)
    if _len(reached) != _len(fresh):
        raise _ValueError("%d new objects that nothing in the message refers to"
                          % (_len(fresh) - _len(reached)))


def _apply_entries(graph, entries, new_object, handles, writable=None, roots=None):
    """Writes a message's table entries into `graph`'s objects, making the new ones
    (`new_object(key)` for an object of class `key`). Strict: a malformed entry, an id the
    sender may not make, a reference to nothing or a change of kind is a ValueError; so is,
    with `writable` (the test process), an attribute `writable(obj, name, had)` refuses,
    and, with `roots` (the wire values the message carries besides its entries), a new
    object that neither they nor an object already in the table reach. Returns the ids
    the entries named."""
    if _type(entries) is not _list or _len(entries) > _MAX_ENTRIES:
        raise _ValueError("a malformed object table")
    if not entries:
        return []
    if roots is not None:
        _check_reached(graph, entries, roots)
    staged = []
    for entry in entries:
        if _type(entry) is not _list or _len(entry) != 4:
            raise _ValueError("a malformed object entry")
        wid, kind, key, body = entry
        if (_type(wid) is not _int or kind not in ("o", "l", "d", "S")
                or _type(body) is not _list or _len(body) > _MAX_ITEMS):
            raise _ValueError("a malformed object entry")
        target = graph.objs.get(wid, _NOTHING)
        if target is _NOTHING:
            if not graph.may_make(wid):
                raise _ValueError("an object id the sender may not make")
            if kind == "o":
                target = new_object(key)
            else:
                target = _list() if kind == "l" else _dict() if kind == "d" else _set()
            graph.add(target, wid)
        elif _kind_of_target(target) != kind:
            raise _ValueError("an object that changed its kind")
        staged.append((target, kind, body))
    # Objects and lists first; dicts and sets hash their keys, which may be those objects.
    for stage in (("o", "l"), ("d", "S")):
        for target, kind, body in staged:
            if kind not in stage:
                continue
            if kind == "o":
                attrs = {}
                d = _object_getattribute(target, "__dict__")
                for pair in body:
                    if _type(pair) is not _list or _len(pair) != 2 or _type(pair[0]) is not _str:
                        raise _ValueError("a malformed attribute")
                    if writable is not None:
                        writable(target, pair[0], pair[0] in d)
                    attrs[pair[0]] = _from_wire(pair[1], 1, handles, graph)
                _dict_clear(d)
                _dict_update(d, attrs)
            elif kind == "l":
                if _set(_map(_type, body)) <= _BARE_TYPES:
                    _list_setitem(target, _slice(None), body)  # bare scalars: the values
                else:
                    _list_setitem(target, _slice(None),
                                  [_from_wire(v, 1, handles, graph) for v in body])
            elif kind == "d":
                out = {}
                for pair in body:
                    if _type(pair) is not _list or _len(pair) != 2:
                        raise _ValueError("a malformed dict entry")
                    out[_from_wire(pair[0], 1, handles, graph)] = _from_wire(pair[1], 1, handles, graph)
                _dict_clear(target)
                _dict_update(target, out)
            else:
                items = [_from_wire(v, 1, handles, graph) for v in body]
                _set_clear(target)
                _set_update(target, items)
    return [entry[0] for entry in entries]


def _received(graph, entries):
    """Candidate process: what the test process sent of each object (after
    _apply_entries took the entries): the body it holds now, and for a list of bare
    scalars the items themselves (_Encoder.drain sends it back only if they changed)."""
    last = graph.last
    bare = graph.bare
    for wid, kind, _key, body in entries:
        last[wid] = body
        if kind == "l" and _set(_map(_type, body)) <= _BARE_TYPES:
            bare[wid] = body
        else:
            bare.pop(wid, None)


def _is_iterator(value):
    """An iterator a builtin made (a generator, map, zip...): passed as its items."""
    t = _type(value)
    return not (t.__flags__ & _heap_type_flag) and _hasattr(t, "__next__")
