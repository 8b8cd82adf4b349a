# egca's test harness. Runs inside the sandboxed child, forked from the warm interpreter.
#
# The C++ side (child_main.cpp) calls prepare_test(request) before any candidate code runs
# and writes its answer (the test is well formed, or why not) as the first record of the
# result channel; then run_test(prepared) runs the candidate and returns a dict that
# becomes the second record: how the run ended and, for a call test, the returned value
# (encoded by the C++ side from plain values only). Nothing here judges: the expected
# value and the expected output never reach this process; the parent compares (see
# tracer/src/judge.h) and decides what a record is worth. The candidate shares this
# process, so everything below may be tampered with by it; the parent trusts the second
# record as plain data only. An assert test normally runs in two such processes (see
# "Assert tests in two processes" below): the candidate's, which never gets the test code,
# and a test process, which never runs candidate code and whose record decides.

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
_setattr = setattr
_slice = slice
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


class _Capture:
    """Replaces sys.stdin/stdout for one run and restores them afterwards. stdout writes
    go to file descriptor 1, whose bytes the sandbox counts (the output limit) and hands
    to the parent, which compares them: nothing the program does in this process can
    change what it printed or how much."""

    def __init__(self, stdin_bytes, discard=False):
        # discard: a retrace, whose output was already judged in the first run.
        raw = _io.BytesIO() if discard else _io.FileIO(1, "w", closefd=False)
        self.stdout = _io.TextIOWrapper(_io.BufferedWriter(raw, 1 << 16),
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
        try:
            self.stdout.flush()
        except (OSError, _ValueError):
            pass  # fd 1 closed by the program: what it printed is what reached the pipe


def _bounded(text, limit):
    """Cuts `text` to at most `limit` UTF-8 bytes without splitting a character."""
    data = text.encode("utf-8", "replace")
    if _len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + "..."


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
    _exercise_pair_codecs()
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


def prepare_test(request):
    """Everything that is not the candidate, before any candidate code runs: the test is
    parsed and compiled, so a malformed test is reported as such (egca's error) and not
    blamed on the candidate. Returns {"outcome": "test_error", "message": ...} or
    {"outcome": "prepared", "prepared": <state for run_test>}. The C++ side commits this
    answer to the result channel before run_test starts: a test error is believed only
    from here, never from a record written after the candidate ran."""
    limit = request.get("max_report_bytes", 2048)
    kind = request["kind"]
    try:
        prepared = _prepare(request, kind)
    except _TestError as exc:
        return {"outcome": "test_error", "message": _bounded(_str(exc), limit)}
    if request.get("trace_mode", "none") == "native":
        try:
            _make_tracer("native")
        except ImportError as exc:
            return {"outcome": "test_error", "message": "native tracing unavailable: %s" % exc}
    prepared.request = request
    return {"outcome": "prepared", "prepared": prepared}


def run_test(prepared):
    """Runs the candidate on the test prepare_test() accepted. Returns the completion
    record as a dict with "outcome" in {ok (ran to completion; the parent compares),
    syntax_error, runtime_error, memory_error, exited} plus details; for a call test
    "value" is the returned object (the C++ side encodes it if it is plain data)."""
    request = prepared.request
    limit = request.get("max_report_bytes", 2048)
    kind = request["kind"]
    source = request["source"]
    _reset_process_state()
    if kind == "assert" and prepared.role == "test":
        return _run_test_process(prepared, limit)

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

    tracer = _make_tracer(request.get("trace_mode", "none"))
    retrace = request.get("retrace_visible_failures", False)
    if retrace:
        # The graded run is untraced; a failure this process can see (below) is run again,
        # traced, by retrace() after the caller has written this run's record.
        result, value = _execute(code, request, kind, prepared, _NoTrace(), limit)
    else:
        with _TraceBudget(tracer, request.get("trace_seconds", 0.0),
                          request.get("trace_budget_raises", False)):
            result, value = _execute(code, request, kind, prepared, tracer, limit)
    if retrace and _visible_failure(result, request):
        _pending_retrace[:] = [code, request, kind, prepared, tracer, limit]
    if result is None:
        result = {"outcome": "ok"}
        if kind == "call":
            result["value"] = value
            result["actual"] = _safe_repr(value, limit)
    if "test_line" in result:
        text = _source_line(request.get("test_code", ""), result["test_line"]).strip()
        if text:
            result["detail"] = "test line %d: %s" % (result["test_line"], _bounded(text, limit))
    if result.get("outcome") == "ok" and _last_candidate_exception:
        # The candidate process: the last exception a call raised (the parent uses it when
        # the test process says the test failed with it).
        for key, value in _last_candidate_exception[0].items():
            if key in ("error_type", "message", "line", "column", "end_line", "end_column"):
                result[key] = value
    if result.get("outcome") == "ok" and kind == "assert" and prepared.role == "candidate":
        # Per test served (one, or a batch's), the last exception its calls raised.
        result["served_tests"] = _served_tests + [_last_exception_fields()]
    if _isinstance(tracer, _SettraceBaseline):
        result["settrace_snapshots"] = _len(tracer.snapshots)
    return result


def _visible_failure(result, request):
    """A failure known here without the expected value: an early exit, a failing assert of
    the test code (an exception with no position in the candidate), and the program's own
    exception when retrace_exceptions. Wrong answers are the parent's to find."""
    if result is None:
        return False
    outcome = result.get("outcome")
    if outcome == "exited":
        return True
    if outcome != "runtime_error":
        return False
    return result.get("line", 0) <= 0 or request.get("retrace_exceptions", True)


_pending_retrace = []


def retrace_pending():
    return _bool(_pending_retrace)


def retrace():
    """The traced second run run_test() left pending, under the request's time budget. Its
    result is not judged (its output is discarded): only its trace is wanted."""
    if not _pending_retrace:
        return False
    code, request, kind, prepared, tracer, limit = _pending_retrace
    del _pending_retrace[:]
    _reset_process_state()
    with _TraceBudget(tracer, request.get("trace_seconds", 0.0)):
        _execute(code, request, kind, prepared, tracer, limit, discard_output=True)
    return True


def _execute(code, request, kind, prepared, tracer, limit, discard_output=False):
    """One execution of the candidate on the test, in a fresh namespace with captured
    stdin/stdout. Returns (result or None when it completed, returned value)."""
    namespace = {"__name__": "__main__" if kind == "stdio" else "__candidate__",
                 "__builtins__": _builtins}
    stdin_bytes = request.get("stdin", b"") if kind == "stdio" else b""
    capture = _Capture(stdin_bytes, discard_output)
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
        except _SystemExit as exc:
            if kind != "stdio":
                # APPS treats exit()/sys.exit() after printing as a normal end (stdio only).
                result = {"outcome": "exited",
                          "detail": "SystemExit(%s) before the test completed"
                                    % _safe_repr(exc.code, 64)}
        except _MemoryError:
            namespace = None
            value = None
            _collect()
            result = {"outcome": "memory_error", "error_type": "MemoryError"}
        except _BaseException as exc:
            result = exception_result(exc, limit)
            if _isinstance(exc, _RecursionError):
                result["detail"] = "maximum recursion depth exceeded"
        capture.flush()
    _settrace(None)
    return result, value


class _Prepared:
    __slots__ = ("setup", "header", "test", "args", "function", "entry_point", "request",
                 "role", "problem")


PROBLEM_FILENAME = "<problem>"


def _problem_helpers(source, entry_point):
    """The problem's own helpers that its test calls (HumanEval/32's poly, /38's
    encode_cyclic, /50's encode_shift): the top-level imports of the problem's code (the
    prompt) and every top-level function in it other than the entry point that has a body
    beyond its docstring, compiled. The test process runs them after it made its
    namespace, so these names are the problem's definitions, never the candidate's."""
    try:
        tree = _ast.parse(source, PROBLEM_FILENAME)
    except (_SyntaxError, _ValueError) as exc:
        raise _TestError("the problem's code does not parse: %s" % exc)
    keep = []
    for node in tree.body:
        t = _type(node)
        if t is _ast.Import or t is _ast.ImportFrom:
            keep.append(node)
        elif (t is _ast.FunctionDef or t is _ast.AsyncFunctionDef) and node.name != entry_point:
            body = [n for n in node.body
                    if not (_type(n) is _ast.Expr and _type(n.value) is _ast.Constant)
                    and _type(n) is not _ast.Pass]
            if body:
                keep.append(node)
    if not any(_type(n) is not _ast.Import and _type(n) is not _ast.ImportFrom for n in keep):
        return None
    return _compile(_ast.Module(body=keep, type_ignores=[]), PROBLEM_FILENAME, "exec",
                    dont_inherit=True)


def _prepare(request, kind):
    """Parses and compiles everything that is not the candidate before it runs, so that a
    malformed test is reported as such and not blamed on the candidate."""
    p = _Prepared()
    p.setup = None
    p.test = None
    p.header = None
    p.args = None
    p.function = request.get("function", "")
    p.entry_point = request.get("entry_point", "")
    p.request = None
    p.role = request.get("role", "")
    p.problem = None
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
        problem = request.get("problem_code", "")
        if problem.strip() and p.role == "test":
            p.problem = _problem_helpers(problem, p.entry_point)
    elif kind != "stdio":
        raise _TestError("unknown test kind %r" % kind)
    return p


# ---- Assert tests: the candidate behind plain values --------------------------------------
#
# HumanEval's check(candidate) and MBPP's asserts compare what the candidate returns with
# the test's own `==`. An object whose __eq__ always returns True would pass them. So the
# test code does not see the candidate's functions: it runs in its own namespace, where
# every callable the program defined is a proxy that rebuilds the returned value from
# plain data (None, bool, int, float, complex, str, bytes, list, tuple, dict, set,
# frozenset; subclasses of these are read through the base type's own methods, so an
# override never runs), and refuses anything else with TypeError. Iterators and
# generators are passed as generators of rebuilt items. The test namespace's builtins are
# a copy taken when the harness was loaded, before any candidate ran.

_BUILTINS_SNAPSHOT = _dict(_builtins.__dict__)
_FunctionType = _type(_resolve_function)
_BuiltinFunctionType = _type(_len)
_ModuleType = _type(_sys)
_int_index = _int.__index__
_float_float = _float.__float__
_str_str = _str.__str__
_bytes_bytes = bytes.__bytes__
_complex_complex = complex.__complex__
_list_iter = _list.__iter__
_tuple_iter = _tuple.__iter__
_set_iter = _set.__iter__
_frozenset_iter = _frozenset.__iter__
_dict_items = _dict.items
_heap_type_flag = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
_TypeError = TypeError
_id = id
_issubclass = issubclass
_sorted = sorted
_max = max


class _NotPlain(_Exception):
    pass


def _rebuild(value, depth=0, test_types=()):
    if depth > 100:
        raise _NotPlain("nested deeper than 100")
    if value is None or value is True or value is False:
        return value
    t = _type(value)
    if t is _int or t is _float or t is _str or t is bytes:
        return value
    if _isinstance(value, _int):
        return _int_index(value)
    if _isinstance(value, _float):
        return _float_float(value)
    if _isinstance(value, _str):
        return _str_str(value)
    if _isinstance(value, bytes):
        return _bytes_bytes(value)
    if _isinstance(value, complex):
        return _complex_complex(value)
    if _isinstance(value, _list):
        return [_rebuild(v, depth + 1, test_types) for v in _list_iter(value)]
    if _isinstance(value, _tuple):
        return _tuple(_rebuild(v, depth + 1, test_types) for v in _tuple_iter(value))
    if _isinstance(value, _dict):
        return {_rebuild(k, depth + 1, test_types): _rebuild(v, depth + 1, test_types)
                for k, v in _dict_items(value)}
    if _isinstance(value, _frozenset):
        return _frozenset(_rebuild(v, depth + 1, test_types) for v in _frozenset_iter(value))
    if _isinstance(value, _set):
        return {_rebuild(v, depth + 1, test_types) for v in _set_iter(value)}
    for test_type in test_types:  # by identity: a metaclass's __eq__ never runs
        if t is test_type:
            return value  # an object of a class the test code defined (QuixBugs' Node)
    if depth == 0 and not (t.__flags__ & _heap_type_flag) and _hasattr(t, "__next__"):
        return _plain_items(value, test_types)
    raise _NotPlain(t.__name__)


def _plain_items(iterator, test_types):
    for item in iterator:
        yield _rebuild(item, 0, test_types)


def _plain_result(fn, test_ns, program_ids):
    def candidate(*args, **kwargs):
        value = fn(*args, **kwargs)
        # Classes the test code itself defined so far (not the program's).
        test_types = [v for v in _list(test_ns.values())
                      if _isinstance(v, _type) and _id(v) not in program_ids]
        try:
            return _rebuild(value, 0, test_types)
        except _NotPlain as exc:
            raise _TypeError("the candidate returned a %s, not a plain value (%s)"
                             % (_type(value).__name__, exc)) from None
    return candidate


def _is_programs_callable(value):
    """A callable the program made: its functions (also behind a decorator such as
    lru_cache, or as callable objects). Classes, modules, builtins and functions of the
    test's own setup code stay as they are."""
    t = _type(value)
    if t is _FunctionType:
        return value.__code__.co_filename == CANDIDATE_FILENAME
    if t is _BuiltinFunctionType or _isinstance(value, (_type, _ModuleType)):
        return False
    return _callable(value)


def _test_namespace(namespace):
    """The names the test code sees: the program's, its own callables behind proxies."""
    test_ns = {}
    program_ids = {_id(v) for v in namespace.values()}
    for name, value in _list(namespace.items()):
        if not name.startswith("__") and _is_programs_callable(value):
            value = _plain_result(value, test_ns, program_ids)
        test_ns[name] = value
    test_ns["__name__"] = "__test__"
    test_ns["__builtins__"] = _BUILTINS_SNAPSHOT
    return test_ns


def _run_candidate(code, namespace, kind, prepared):
    _exec(code, namespace)
    if kind == "call":
        fn = _resolve_function(namespace, prepared.function)
        if fn is None:
            raise NameError("the program defines no function %r (nor Solution.%s)"
                            % (prepared.function, prepared.function))
        return fn(*prepared.args)
    if kind == "assert" and prepared.role == "candidate":
        _serve_calls(namespace, prepared.request.get("max_report_bytes", 2048))
        return None
    if kind == "assert":
        # MBPP's test_setup_code builds fixtures from the program's own classes (Node
        # trees), so it runs after the program and before the asserts.
        if prepared.setup is not None:
            _exec(prepared.setup, namespace)
        _exec(prepared.test, _test_namespace(namespace))
    return None


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


def _send_frame(obj):
    data = _frame_dumps(obj).encode("ascii")
    size = _len(data)
    if size > _MAX_FRAME:
        raise _TooLarge(size)
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
            if _type(frame) is _dict and _len(frame) == 1 and frame.get("next") == 1:
                _next_test(namespace)
                continue
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


# ---- A reused test process -----------------------------------------------------------------
#
# The executor keeps one test process per worker alive across assert tests
# (tracer/src/test_session.h): it never runs candidate code, so only the test code and the
# plain data decoded from candidate processes ever ran in it. Between two tests everything
# a test or a reply could have left behind is put back as it was when the process started
# serving: the pair protocol's tables, the modules and builtins, the recursion limit, the
# standard streams and the working directory. The next test cannot tell it is not in a
# fresh process (tests/tracer/executor_test_session_e2e_test.cpp).

_session_state = {}


def session_begin():
    """Called once in a test process that will serve several tests, before the first."""
    _session_state["modules"] = _dict(_sys.modules)
    _session_state["builtins"] = _dict(_builtins.__dict__)
    _session_state["recursion"] = _sys.getrecursionlimit()
    _session_state["streams"] = (_sys.stdin, _sys.stdout, _sys.stderr)
    _session_state["cwd"] = _os.getcwd()
    # Emptied between tests only when it is the sandbox's private directory (the fork server
    # sets TMPDIR to it and starts there): the harness imported anywhere else never deletes
    # the files of the directory it happens to run in.
    _session_state["private_dir"] = _private_dir(_session_state["cwd"])
    _session_state["gc"] = (_gc.isenabled(), _gc.get_threshold())
    _session_state["sys_attrs"] = _set(_sys.__dict__)
    session_reset()


def _private_dir(cwd):
    tmpdir = _os.environ.get("TMPDIR", "")
    if not tmpdir or cwd == "/":
        return False
    try:
        return _os.path.samefile(cwd, tmpdir)
    except OSError:
        return False


def _empty_directory(path):
    """Removes what a test wrote into the test process's private directory."""
    with _os.scandir(path) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        if is_dir:
            import shutil
            shutil.rmtree(_os.path.join(path, name), ignore_errors=True)
        else:
            try:
                _os.unlink(_os.path.join(path, name))
            except OSError:
                pass


def session_reset():
    """After each test of a reused test process: back to the state session_begin saw."""
    del _inbox[:]
    _nt_classes.clear()
    _handle_objects.clear()
    _instance_names.clear()
    del _callbacks[:]
    _callback_index.clear()
    _class_names.clear()
    del _pending_retrace[:]
    _CandidateRaised.ids = _set()
    _TestSide.graph = _Graph(1)
    _TestSide.module = None
    _TestSide.module_sent = False
    _TestSide.prepared = None
    _TestSide.sent_handles = _set()
    _TestSide.failed_assert = None
    _TestSide.new_classes = []
    modules = _session_state["modules"]
    for name in [n for n in _sys.modules if n not in modules]:
        del _sys.modules[name]
    for name, module in modules.items():
        if _sys.modules.get(name) is not module:
            _sys.modules[name] = module
    _builtins.__dict__.clear()
    _builtins.__dict__.update(_session_state["builtins"])
    for name in [n for n in _sys.__dict__ if n not in _session_state["sys_attrs"]]:
        try:
            delattr(_sys, name)
        except AttributeError:
            pass
    _sys.setrecursionlimit(_session_state["recursion"])
    _sys.stdin, _sys.stdout, _sys.stderr = _session_state["streams"]
    try:
        _os.chdir(_session_state["cwd"])
        if _session_state["private_dir"]:
            _empty_directory(".")
    except OSError:
        pass
    enabled, threshold = _session_state["gc"]
    _gc.set_threshold(*threshold)
    if enabled:
        _gc.enable()
    _reset_process_state()
    # What the test dropped is freed now, cycles included (a test's objects, a reply's
    # graph): the next test starts with the memory a fresh process has, not with garbage
    # that waits for a collection of the oldest generation. The executor restarts a
    # session whose memory stays above its start all the same (test_session.h).
    _gc.collect()
