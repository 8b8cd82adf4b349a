# egca's test harness. Runs inside the sandboxed child, forked from the warm interpreter.
#
# The C++ side (child_main.cpp) calls run_test(request) with a dict built from the
# ExecRequest proto and turns the returned dict into the ExecResult completion record. It
# writes that record only after run_test returned, so a program that exits or dies while
# its test runs never produces one.
#
# The candidate runs in this process, so everything the harness relies on after the
# candidate ran is bound here at import time (builtins included): a program that patches
# builtins or sys.modules cannot change how its result is judged.

import ast as _ast
import builtins as _builtins
import gc as _gc
import io as _io
import json as _json
import math as _math
import os as _os
import random as _random
import _signal
import sys as _sys

CANDIDATE_FILENAME = "<candidate>"
TEST_FILENAME = "<test>"
HEADER_FILENAME = "<header>"
SETUP_FILENAME = "<setup>"

# The import block APPS's testing_util prepends to every solution, minus numpy (not part of
# the embedded interpreter's isolated stdlib).
APPS_IMPORT_HEADER = """\
import sys
import time
import itertools
from itertools import accumulate, product, permutations, combinations
import collections
from collections import Counter, OrderedDict, deque, defaultdict, ChainMap
from functools import lru_cache
import math
from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2
import fractions
from typing import List, Tuple
import random
import heapq
from heapq import *
"""

# The environment every candidate sees (the hash seed is fixed in the interpreter config).
# HOME and TMPDIR are replaced in warm_up() by the sandbox's private directory, the only
# place a candidate may write.
FIXED_ENVIRON = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
}

_type = type
_isinstance = isinstance
_len = len
_str = str
_repr = repr
_float = float
_int = int
_bool = bool
_list = list
_tuple = tuple
_dict = dict
_set = set
_frozenset = frozenset
_zip = zip
_range = range
_exec = exec
_compile = compile
_getattr = getattr
_hasattr = hasattr
_callable = callable
_BaseException = BaseException
_Exception = Exception
_SystemExit = SystemExit
_KeyboardInterrupt = KeyboardInterrupt
_MemoryError = MemoryError
_SyntaxError = SyntaxError
_ValueError = ValueError
_RecursionError = RecursionError
_isclose = _math.isclose
_isfinite = _math.isfinite
_json_loads = _json.loads
_settrace = _sys.settrace
_gettrace = _sys.gettrace
_collect = _gc.collect

class _Quitter:
    """exit()/quit() as the site module defines them; the embedded interpreter runs without
    site, and competitive-programming solutions call exit() after printing."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "Use %s() to exit" % self.name

    def __call__(self, code=None):
        raise _SystemExit(code)


if not _hasattr(_builtins, "exit"):
    _builtins.exit = _Quitter("exit")
    _builtins.quit = _Quitter("quit")


# Values a call-based result may be made of. Anything else (an object with its own __eq__)
# is not compared: a program must not pass by returning an always-equal object.
_PLAIN_SCALARS = (_type(None), _bool, _int, _float, _str, complex, bytes)
_PLAIN_CONTAINERS = (_list, _tuple, _dict, _set, _frozenset)


class OutputLimitExceeded(_BaseException):
    """Raised inside the candidate when its captured stdout exceeds the limit.

    A BaseException so that `except Exception` in the candidate does not swallow it."""


class _BoundedSink(_io.RawIOBase):
    """Raw byte sink for sys.stdout with a hard size bound."""

    def __init__(self, limit):
        super().__init__()
        self.data = bytearray()
        self.limit = limit
        self.exceeded = False

    def writable(self):
        return True

    def write(self, b):
        n = _len(b)
        if _len(self.data) + n > self.limit:
            self.exceeded = True
            raise OutputLimitExceeded()
        self.data += b
        return n


class _Capture:
    """Replaces sys.stdin/stdout for one run and restores them afterwards."""

    def __init__(self, stdin_bytes, output_limit):
        self.sink = _BoundedSink(output_limit)
        self.stdout = _io.TextIOWrapper(_io.BufferedWriter(self.sink, 1 << 16),
                                        encoding="utf-8", errors="replace", newline="\n")
        self.stdin = _io.TextIOWrapper(_io.BufferedReader(_io.BytesIO(stdin_bytes)),
                                       encoding="utf-8", errors="replace")
        self.saved = None

    def __enter__(self):
        # The dunder streams too: some solutions write to sys.__stdout__ for speed.
        self.saved = (_sys.stdin, _sys.stdout, _sys.__stdin__, _sys.__stdout__)
        _sys.stdin = _sys.__stdin__ = self.stdin
        _sys.stdout = _sys.__stdout__ = self.stdout
        return self

    def __exit__(self, *exc):
        _sys.stdin, _sys.stdout, _sys.__stdin__, _sys.__stdout__ = self.saved
        return False

    def flush(self):
        if not self.sink.exceeded:
            self.stdout.flush()

    def text(self):
        return _bytes_to_text(self.sink.data)


def _bytes_to_text(data):
    return bytes(data).decode("utf-8", "replace")


def _bounded(text, limit):
    """Cuts `text` to at most `limit` UTF-8 bytes without splitting a character."""
    data = text.encode("utf-8", "replace")
    if _len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + "..."


# ---- Comparison (APPS conventions) ------------------------------------------------------

def _is_plain(value, depth=0):
    if depth > 100:
        return False
    t = _type(value)
    if t in _PLAIN_SCALARS:
        return True
    if t in (_list, _tuple, _set, _frozenset):
        for v in value:
            if not _is_plain(v, depth + 1):
                return False
        return True
    if t is _dict:
        for k, v in value.items():
            if not _is_plain(k, depth + 1) or not _is_plain(v, depth + 1):
                return False
        return True
    return False


def _floats_close(a, b, rel, abs_):
    if not (_isfinite(a) and _isfinite(b)):
        return a == b or (a != a and b != b)
    return abs(a - b) <= abs_ + rel * abs(b)


def _values_equal(actual, expected, rel, abs_, depth=0):
    """Structural equality where tuples equal lists and floats compare with tolerance."""
    if depth > 100:
        return False
    ta, te = _type(actual), _type(expected)
    if ta is _bool or te is _bool:
        return ta is te and actual == expected
    if ta in (_int, _float) and te in (_int, _float):
        if ta is _int and te is _int:
            return actual == expected
        return _floats_close(_float(actual), _float(expected), rel, abs_)
    if ta in (_list, _tuple) and te in (_list, _tuple):
        if _len(actual) != _len(expected):
            return False
        for a, e in _zip(actual, expected):
            if not _values_equal(a, e, rel, abs_, depth + 1):
                return False
        return True
    if ta is _dict and te is _dict:
        if _len(actual) != _len(expected):
            return False
        for k, v in actual.items():
            key = k
            if key not in expected:
                # JSON object keys are strings; a program may use ints.
                key = _str(k)
                if key not in expected:
                    return False
            if not _values_equal(v, expected[key], rel, abs_, depth + 1):
                return False
        return True
    if ta in (_set, _frozenset) and te in (_list, _tuple, _set, _frozenset):
        try:
            return actual == _set(_freeze(e) for e in expected)
        except _Exception:
            return False
    return ta is te and actual == expected


def _freeze(value):
    if _type(value) in (_list, _tuple):
        return _tuple(_freeze(v) for v in value)
    return value


def returned_value_matches(actual, expected, rel, abs_):
    """APPS call-based comparison: plain equality (tuples as lists, float tolerance), or the
    expected value wrapped in a one-element list, or a JSON-encoded expected string."""
    if not _is_plain(actual):
        return False
    if _values_equal(actual, expected, rel, abs_):
        return True
    if _type(expected) is _list and _len(expected) == 1:
        if _values_equal(actual, expected[0], rel, abs_):
            return True
    if _type(expected) is _str and _type(actual) is not _str:
        try:
            decoded = _json_loads(expected)
        except _Exception:
            return False
        return _values_equal(actual, decoded, rel, abs_)
    if _type(expected) is _list and _len(expected) == 1 and _type(expected[0]) is _str:
        try:
            decoded = _json_loads(expected[0])
        except _Exception:
            return False
        if _type(decoded) is not _str:
            return _values_equal(actual, decoded, rel, abs_)
    return False


def _tokens_close(actual_tokens, expected_tokens, rel, abs_):
    if _len(actual_tokens) != _len(expected_tokens):
        return False
    for a, e in _zip(actual_tokens, expected_tokens):
        if a == e:
            continue
        try:
            fa, fe = _float(a), _float(e)
        except _ValueError:
            return False
        if not _floats_close(fa, fe, rel, abs_):
            return False
    return True


def stdout_matches(actual, expected, rel, abs_):
    """APPS standard-input comparison, strictest first: exact text; lines with surrounding
    whitespace stripped and blank lines dropped; whitespace-separated tokens; tokens with
    numbers compared as floats (numpy.allclose tolerance). Returns the rule that matched
    or None."""
    if actual == expected:
        return "exact"
    a_lines = [l.strip() for l in actual.split("\n") if l.strip()]
    e_lines = [l.strip() for l in expected.split("\n") if l.strip()]
    if a_lines == e_lines:
        return "lines"
    a_tokens, e_tokens = actual.split(), expected.split()
    if a_tokens == e_tokens:
        return "tokens"
    if _tokens_close(a_tokens, e_tokens, rel, abs_):
        return "float_tokens"
    return None


# ---- Error reporting ---------------------------------------------------------------------

def _char_to_byte_column(line_text, char_offset):
    return _len(line_text[:max(char_offset, 0)].encode("utf-8"))


def _source_line(source, line):
    lines = source.split("\n")
    if 1 <= line <= _len(lines):
        return lines[line - 1]
    return ""


def syntax_result(exc, source, limit):
    """SyntaxError/IndentationError/TabError positions: CPython gives 1-based character
    offsets; egca reports 0-based UTF-8 byte columns."""
    line = exc.lineno or 0
    end_line = _getattr(exc, "end_lineno", None) or line
    text = _source_line(source, line) if line else ""
    column = _char_to_byte_column(text, (exc.offset or 1) - 1) if line else 0
    end_offset = _getattr(exc, "end_offset", None)
    if end_line and end_offset and end_offset > 0:
        end_text = _source_line(source, end_line)
        end_column = _char_to_byte_column(end_text, end_offset - 1)
    else:
        end_column = column
    return {
        "outcome": "syntax_error",
        "error_type": _type(exc).__name__,
        "message": _bounded(_str(exc.msg or ""), limit),
        "line": line, "column": column, "end_line": end_line, "end_column": end_column,
    }


def nul_byte_result(exc, source, limit):
    """compile() refuses NUL bytes with ValueError before parsing; report where the first
    one is."""
    index = source.find("\0")
    line = source.count("\n", 0, index) + 1 if index >= 0 else 0
    line_start = source.rfind("\n", 0, index) + 1 if index >= 0 else 0
    column = _len(source[line_start:index].encode("utf-8")) if index >= 0 else 0
    return {
        "outcome": "syntax_error",
        "error_type": "SyntaxError",
        "message": _bounded(_str(exc), limit),
        "line": line, "column": column, "end_line": line, "end_column": column + 1,
    }


def _compile_as_function_body(source):
    """APPS runs a standard-input program as the body of a function `code()`, so a
    module-level `return` (a common early exit in competitive code) is legal there. Done on
    the AST, so every statement keeps its line and column. Star imports stay at module
    level (they are not allowed in a function). Returns None if it still does not compile."""
    try:
        tree = _ast.parse(source, CANDIDATE_FILENAME)
        hoisted = [n for n in tree.body
                   if _isinstance(n, _ast.ImportFrom) and any(a.name == "*" for a in n.names)]
        body = [n for n in tree.body if not any(n is h for h in hoisted)] or [_ast.Pass()]
        function = _ast.FunctionDef(
            name="code",
            args=_ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                kw_defaults=[], kwarg=None, defaults=[]),
            body=body, decorator_list=[], returns=None, type_comment=None,
            lineno=1, col_offset=0, end_lineno=1, end_col_offset=0)
        call = _ast.Expr(_ast.Call(_ast.Name("code", _ast.Load()), [], []))
        module = _ast.Module(body=hoisted + [function, call], type_ignores=[])
        _ast.fix_missing_locations(module)
        return _compile(module, CANDIDATE_FILENAME, "exec", dont_inherit=True)
    except (_SyntaxError, _ValueError, TypeError):
        return None


def _innermost_frame_in(tb, filename):
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = tb
        tb = tb.tb_next
    return found


def _position_of(tb):
    """(line, column, end_line, end_column) of the instruction a traceback entry points at,
    from the code object's position table."""
    line = tb.tb_lineno or 0
    try:
        positions = _list(tb.tb_frame.f_code.co_positions())
        entry = positions[tb.tb_lasti // 2]
    except _Exception:
        entry = None
    if entry is None or entry[0] is None:
        return line, 0, line, 0
    start, end, col, end_col = entry
    return (start or line, col or 0, end or start or line,
            end_col if end_col is not None else (col or 0))


def exception_result(exc, limit):
    """Exception type, message and the innermost "<candidate>" frame's position. When the
    exception was raised in test code (a failing assert in check()), the position is that
    of the candidate frame nearest to it if any, and the failing test line is the detail."""
    result = {
        "outcome": "runtime_error",
        "error_type": _type(exc).__name__,
        "message": _bounded(_safe_str(exc), limit),
    }
    tb = exc.__traceback__
    user_tb = _innermost_frame_in(tb, CANDIDATE_FILENAME)
    if user_tb is not None:
        line, column, end_line, end_column = _position_of(user_tb)
        result.update(line=line, column=column, end_line=end_line, end_column=end_column)
    test_tb = _innermost_frame_in(tb, TEST_FILENAME)
    if test_tb is not None:
        result["detail"] = "test line %d" % test_tb.tb_lineno
        result["test_line"] = test_tb.tb_lineno
    return result


def _safe_str(exc):
    try:
        return _str(exc)
    except _BaseException:
        return "<unprintable %s>" % _type(exc).__name__


def _safe_repr(value, limit):
    try:
        return _bounded(_repr(value), limit)
    except _BaseException:
        return "<unprintable %s>" % _type(value).__name__


# ---- Tracing -----------------------------------------------------------------------------

class _SettraceBaseline:
    """The pure-Python tracer egca's native one is benchmarked against: copies the locals
    of candidate frames at every line event."""

    def __init__(self):
        self.snapshots = []

    def __call__(self, frame, event, arg):
        if frame.f_code.co_filename != CANDIDATE_FILENAME:
            return None
        if event == "line":
            self.snapshots.append(_dict(frame.f_locals))
        return self

    def start(self):
        _settrace(self)

    def stop(self):
        _settrace(None)


class _NativeTrace:
    def __init__(self, module):
        self.module = module

    def start(self):
        self.module.start(CANDIDATE_FILENAME)

    def stop(self):
        self.module.stop()


class _NoTrace:
    def start(self):
        pass

    def stop(self):
        pass


class _TraceBudget:
    """Wall-time budget of a traced run (trace_seconds): when it runs out the native tracer
    stops recording and stops the program at its next line (_egca_trace.stop_run()).
    With `raises` (the bounded trace of a timed-out test) a TimeoutError is raised in the
    program first, so the trace records where it was; if the program goes on regardless,
    it is stopped 50 ms later."""

    def __init__(self, tracer, seconds, raises=False):
        self.module = tracer.module if _isinstance(tracer, _NativeTrace) else None
        self.seconds = seconds
        self.raises = raises
        self.armed = False
        self.previous = None

    def _expired(self, signum, frame):
        if self.raises:
            self.raises = False
            _signal.setitimer(_signal.ITIMER_REAL, 0.05)
            raise TimeoutError("egca: bounded trace of a timed-out test")
        self.module.stop_run()

    def __enter__(self):
        if self.module is not None and self.seconds > 0:
            self.previous = _signal.signal(_signal.SIGALRM, self._expired)
            self.armed = True
            _signal.setitimer(_signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.armed:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGALRM,
                           _signal.SIG_DFL if self.previous is None else self.previous)
        return False


def _make_tracer(mode):
    if mode == "native":
        import _egca_trace  # registered with PyImport_AppendInittab by the executor
        return _NativeTrace(_egca_trace)
    if mode == "python_settrace":
        return _SettraceBaseline()
    return _NoTrace()


# ---- Running one test --------------------------------------------------------------------

class _TestError(_Exception):
    """The test itself is malformed (egca's error, not the candidate's)."""


def _reset_process_state():
    _random.seed(0)
    # Normally already fixed by warm_up() in the server; resetting costs ~0.2 ms per run.
    if _dict(_os.environ) != FIXED_ENVIRON:
        _os.environ.clear()
        _os.environ.update(FIXED_ENVIRON)


def warm_up():
    """Runs once in the server before it forks children: fixes the environment they
    inherit and looks up the codecs the stdin/stdout wrappers use (else every child imports
    encodings.utf_8)."""
    import codecs
    for key in ("HOME", "TMPDIR"):
        if key in _os.environ:
            FIXED_ENVIRON[key] = _os.environ[key]
    _os.environ.clear()
    _os.environ.update(FIXED_ENVIRON)
    codecs.lookup("utf-8")
    try:
        import _egca_trace  # noqa: F401  (children that trace find it in sys.modules)
    except ImportError:
        pass


def freeze():
    """Last step in the server before it forks children: moves every object that exists now
    into the GC's permanent generation, so that a child's collections neither walk nor
    copy-on-write the warm heap."""
    _gc.collect()
    _gc.freeze()


def _resolve_function(namespace, name):
    fn = namespace.get(name)
    if _callable(fn):
        return fn
    solution = namespace.get("Solution")
    if solution is not None and _isinstance(solution, _type):
        method = _getattr(solution(), name, None)
        if _callable(method):
            return method
    return None


def run_test(request):
    """Runs request["source"] on one test. Returns the completion record as a dict with
    "outcome" in {ok, wrong_answer, syntax_error, runtime_error, memory_error,
    output_limit, exited, test_error} plus details."""
    limit = request.get("max_report_bytes", 2048)
    kind = request["kind"]
    source = request["source"]
    rel = request.get("float_rel_tolerance", 1e-5)
    abs_ = request.get("float_abs_tolerance", 1e-8)
    _reset_process_state()

    try:
        code = _compile(source, CANDIDATE_FILENAME, "exec", dont_inherit=True)
    except _SyntaxError as exc:
        code = None
        if (kind == "stdio" and request.get("apps_import_header", False)
                and "outside function" in _str(exc.msg)):
            code = _compile_as_function_body(source)
        if code is None:
            return syntax_result(exc, source, limit)
    except _ValueError as exc:
        return nul_byte_result(exc, source, limit)

    try:
        tracer = _make_tracer(request.get("trace_mode", "none"))
    except ImportError as exc:
        return {"outcome": "test_error", "message": "native tracing unavailable: %s" % exc}

    try:
        prepared = _prepare(request, kind)
    except _TestError as exc:
        return {"outcome": "test_error", "message": _bounded(_str(exc), limit)}

    # retrace_failures: the graded run is untraced; a failing one is run again, traced, by
    # retrace() after the caller has committed this run's record (the verdict).
    retrace = (request.get("trace_mode", "none") == "native"
               and request.get("retrace_failures", False))
    if retrace:
        result, value, capture = _execute(code, request, kind, prepared, _NoTrace(), limit)
    else:
        with _TraceBudget(tracer, request.get("trace_seconds", 0.0),
                          request.get("trace_budget_raises", False)):
            result, value, capture = _execute(code, request, kind, prepared, tracer, limit)
    if result is None:
        result = _judge(kind, prepared, value, capture.text(), rel, abs_, limit)
    if retrace and _wants_retrace(result, request):
        _pending_retrace[:] = [code, request, kind, prepared, tracer, limit]
        result["retrace_pending"] = True
    result["stdout"] = bytes(capture.sink.data)
    if "test_line" in result:
        text = _source_line(request.get("test_code", ""), result["test_line"]).strip()
        if text:
            result["detail"] = "test line %d: %s" % (result["test_line"], _bounded(text, limit))
    if _isinstance(tracer, _SettraceBaseline):
        result["settrace_snapshots"] = _len(tracer.snapshots)
    return result


def _wants_retrace(result, request):
    """A failing run is retraced: a wrong answer, an early exit, a failing assert of the
    test code (an exception with no position in the candidate), and the program's own
    exception when retrace_exceptions."""
    outcome = result.get("outcome")
    if outcome in ("wrong_answer", "exited"):
        return True
    if outcome != "runtime_error":
        return False
    own_exception = result.get("line", 0) > 0
    return not own_exception or request.get("retrace_exceptions", True)


_pending_retrace = []


def retrace():
    """The traced second run run_test() left pending (retrace_failures), under the
    request's time budget. Its result is not judged: only its trace is wanted."""
    if not _pending_retrace:
        return False
    code, request, kind, prepared, tracer, limit = _pending_retrace
    del _pending_retrace[:]
    _reset_process_state()
    with _TraceBudget(tracer, request.get("trace_seconds", 0.0)):
        _execute(code, request, kind, prepared, tracer, limit)
    return True


def _execute(code, request, kind, prepared, tracer, limit):
    """One execution of the candidate on the test, in a fresh namespace with captured
    stdin/stdout. Returns (result or None when it completed, returned value, capture)."""
    namespace = {"__name__": "__main__" if kind == "stdio" else "__candidate__",
                 "__builtins__": _builtins}
    stdin_bytes = request.get("stdin", b"") if kind == "stdio" else b""
    capture = _Capture(stdin_bytes, request.get("output_limit", 8 << 20))
    result = None
    value = None
    with capture:
        try:
            if prepared.header is not None:
                _exec(prepared.header, namespace)
            tracer.start()
            try:
                value = _run_candidate(code, namespace, kind, prepared)
            finally:
                tracer.stop()
            capture.flush()
        except OutputLimitExceeded:
            result = {"outcome": "output_limit"}
        except _SystemExit as exc:
            if kind == "stdio":
                # APPS treats exit()/sys.exit() after printing as a normal end.
                try:
                    capture.flush()
                except OutputLimitExceeded:
                    result = {"outcome": "output_limit"}
            else:
                result = {"outcome": "exited",
                          "detail": "SystemExit(%s) before the test completed"
                                    % _safe_repr(exc.code, 64)}
        except _MemoryError:
            namespace = None
            value = None
            _collect()
            result = {"outcome": "memory_error", "error_type": "MemoryError"}
        except _TestError as exc:
            result = {"outcome": "test_error", "message": _bounded(_str(exc), limit)}
        except _BaseException as exc:
            result = exception_result(exc, limit)
            if _isinstance(exc, _RecursionError):
                result["detail"] = "maximum recursion depth exceeded"
    _settrace(None)
    return result, value, capture


class _Prepared:
    __slots__ = ("setup", "header", "test", "args", "expected", "has_expected",
                 "function", "entry_point", "expected_stdout")


def _prepare(request, kind):
    """Parses and compiles everything that is not the candidate before it runs, so that a
    malformed test is reported as such and not blamed on the candidate."""
    p = _Prepared()
    p.setup = None
    p.test = None
    p.header = None
    p.args = None
    p.expected = None
    p.has_expected = _bool(request.get("has_expected", False))
    p.function = request.get("function", "")
    p.entry_point = request.get("entry_point", "")
    p.expected_stdout = request.get("expected_stdout", "")
    if request.get("apps_import_header", False):
        p.header = _compile(APPS_IMPORT_HEADER, HEADER_FILENAME, "exec", dont_inherit=True)
    if kind == "call":
        if not p.function:
            raise _TestError("call test without a function name")
        try:
            p.args = _json_loads(request.get("args_json", "[]"))
        except _ValueError as exc:
            raise _TestError("arguments are not valid JSON: %s" % exc)
        if _type(p.args) is not _list:
            raise _TestError("arguments must be a JSON array")
        if p.has_expected:
            try:
                p.expected = _json_loads(request.get("expected_json", "null"))
            except _ValueError as exc:
                raise _TestError("expected value is not valid JSON: %s" % exc)
    elif kind == "assert":
        setup = request.get("setup_code", "")
        try:
            if setup.strip():
                p.setup = _compile(setup, SETUP_FILENAME, "exec", dont_inherit=True)
            test_code = request.get("test_code", "")
            if p.entry_point:
                test_code = test_code + "\n\ncheck(%s)\n" % p.entry_point
            p.test = _compile(test_code, TEST_FILENAME, "exec", dont_inherit=True)
        except (_SyntaxError, _ValueError) as exc:
            raise _TestError("test code does not compile: %s" % exc)
    elif kind != "stdio":
        raise _TestError("unknown test kind %r" % kind)
    return p


def _run_candidate(code, namespace, kind, prepared):
    _exec(code, namespace)
    if kind == "call":
        fn = _resolve_function(namespace, prepared.function)
        if fn is None:
            raise NameError("the program defines no function %r (nor Solution.%s)"
                            % (prepared.function, prepared.function))
        return fn(*prepared.args)
    if kind == "assert":
        # MBPP's test_setup_code builds fixtures from the program's own classes (Node
        # trees), so it runs after the program and before the asserts.
        if prepared.setup is not None:
            _exec(prepared.setup, namespace)
        _exec(prepared.test, namespace)
    return None


def _judge(kind, prepared, value, stdout_text, rel, abs_, limit):
    if kind == "call":
        actual = _safe_repr(value, limit)
        if not prepared.has_expected:
            return {"outcome": "ok", "actual": actual}
        if returned_value_matches(value, prepared.expected, rel, abs_):
            return {"outcome": "ok", "actual": actual}
        detail = "" if _is_plain(value) else "returned a %s, not a plain value" % (
            _type(value).__name__)
        return {"outcome": "wrong_answer", "actual": actual,
                "expected": _safe_repr(prepared.expected, limit), "detail": detail}
    if kind == "stdio":
        actual = _bounded(stdout_text, limit)
        if not prepared.has_expected:
            return {"outcome": "ok", "actual": actual}
        rule = stdout_matches(stdout_text, prepared.expected_stdout, rel, abs_)
        if rule is not None:
            return {"outcome": "ok", "actual": actual, "detail": "matched: " + rule}
        return {"outcome": "wrong_answer", "actual": actual,
                "expected": _bounded(prepared.expected_stdout, limit)}
    return {"outcome": "ok"}
