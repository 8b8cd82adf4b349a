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
# harness_wire.py): the candidate's, which never gets the test code, and a test process,
# which never runs candidate code and whose record decides.
#
# This file is the harness's entry and holds running one test (prepare_test, run_test,
# the one-process assert path); the rest lives in rooms by role, each a file beside it
# with its contract at the top, executed in order into this module's namespace
# (HARNESS_ROOMS, at the end): harness_wire.py (frames and the value codec between the two
# processes), harness_table.py (the object table, by value-result), harness_candidate.py
# (the candidate process of an assert test), harness_test_process.py (the test process:
# the assert runner) and harness_session.py (a test process reused for many tests).

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
    pair_candidate = kind == "assert" and prepared.role == "candidate"
    if pair_candidate:
        # A failure the test process reports is replayed from the recorded frames.
        _PairRetrace.asked = False
        _pair_recording_reset(retrace)
    if retrace:
        # The graded run is untraced; a failure this process can see (below) is run again,
        # traced, by retrace() after the caller has written this run's record.
        result, value = _execute(code, request, kind, prepared, _NoTrace(), limit)
    else:
        with _TraceBudget(tracer, request.get("trace_seconds", 0.0),
                          request.get("trace_budget_raises", False)):
            result, value = _execute(code, request, kind, prepared, tracer, limit)
    if retrace and (_visible_failure(result, request)
                    or (pair_candidate and result is None and _PairRetrace.asked
                        and _PairRecording.incoming is not None)):
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
    result is not judged (its output is discarded): only its trace is wanted. A candidate
    process of an assert test replays the frames the test process sent in the graded run
    (_PairRecording); False when the replay diverged from the graded run (the program is
    not deterministic): its trace is not the failing run's and is dropped."""
    if not _pending_retrace:
        return False
    code, request, kind, prepared, tracer, limit = _pending_retrace
    del _pending_retrace[:]
    _reset_process_state()
    replay = kind == "assert" and prepared.role == "candidate"
    if replay:
        if _PairRecording.incoming is None:
            return False
        _candidate_tables_reset()
        _pair_replay_at(0, tracer.module.TraceStopped if _isinstance(tracer, _NativeTrace)
                        else ())
    with _TraceBudget(tracer, request.get("trace_seconds", 0.0)):
        result, _value = _execute(code, request, kind, prepared, tracer, limit,
                                  discard_output=True)
    if replay:
        if result is not None and result.get("error_type") == "TraceStopped":
            _PairRecording.stopped = True  # stopped before the program served a call
        # Every frame the graded run sent was sent again, and no other.
        complete = not _PairRecording.diverged and (
            _PairRecording.stopped or _PairRecording.replay_out == _len(_PairRecording.outgoing))
        _PairRecording.replay = None
        return complete
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


# ---- The rooms --------------------------------------------------------------------------
#
# The rest of the harness lives in rooms by role, each a file beside this one with its
# contract at the top; they run in this order in this module's namespace (each uses the
# names of the ones before it). The embedded interpreter compiles this file as the module
# _egca_harness and then executes each room's text into its namespace
# (tracer/src/python_runtime.cpp, from the headers tracer/CMakeLists.txt embeds); imported
# from tracer/src (tests, benches), this file does the same itself.
HARNESS_ROOMS = ("harness_wire", "harness_table", "harness_candidate", "harness_test_process",
                 "harness_session")

if __name__ != "_egca_harness" and "__file__" in globals():
    def _load_rooms():
        here = _os.path.dirname(_os.path.abspath(__file__))
        for room in HARNESS_ROOMS:
            room_path = _os.path.join(here, room + ".py")
            with open(room_path, encoding="utf-8") as f:
                _exec(_compile(f.read(), room_path, "exec", dont_inherit=True), globals())

    _load_rooms()
    del _load_rooms
