# egca's harness, room "session": a test process reused for many tests.
# (The harness is harness.py and its rooms, executed in order into one namespace:
# harness.HARNESS_ROOMS.)
#
# Contract. session_begin, once, records the state a fresh test process has;
# session_reset, after each test, puts everything back (the pair protocol's tables,
# modules, builtins, sys attributes, recursion limit, streams, working directory and its
# files, the garbage collector's settings) and collects every cycle the test left.
# tracer/src/test_session.cpp calls both and retires a session whose memory stays above
# its start.

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
