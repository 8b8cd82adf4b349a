"""The persistent executor pool of route_batch (egca.RoutePool): servers kept across calls,
the same routes as a fresh run, clean shutdown (close, with, atexit, Ctrl-C, SIGKILL of the
host), fork safety, no process left behind."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import egca
from egca import _egca
from conftest import HE0_CORRECT, HE0_LOGIC, HE0_SYNTAX, HUMANEVAL

pytestmark = pytest.mark.usefixtures("routing")

BODIES = [HE0_CORRECT, HE0_LOGIC, HE0_SYNTAX, HE0_LOGIC]
PYTHONPATH = os.pathsep.join(p for p in sys.path if p)


def child_pids(pid=None):
    """Pids of the live (not zombie) children of `pid` (this process by default)."""
    pid = os.getpid() if pid is None else pid
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(entry))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def wait_gone(pids, limit=60.0):
    """True once none of `pids` is alive (polls; `limit` only bounds a failure)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def records(routes):
    out = []
    for r in routes:
        rec = json.loads(r.record_json())
        rec.pop("grade_seconds", None)
        rec.pop("localize_seconds", None)
        out.append(rec)
    return out


def test_pool_keeps_its_servers_across_calls(humaneval):
    before = child_pids()
    with egca.RoutePool(workers=2) as pool:
        assert pool.workers == 2 and pool.running == 0  # servers start on first need
        first = pool.route_batch(humaneval, ["HumanEval/0"] * 4, BODIES, completion_is_body=True)
        servers = child_pids() - before  # each executor's server(s): candidates, test processes
        assert pool.running == 2 and len(servers) >= 2
        for _ in range(3):
            again = pool.route_batch(humaneval, ["HumanEval/0"] * 4, BODIES,
                                     completion_is_body=True)
            assert records(again) == records(first)
        assert pool._pool.started == 2  # no server was started again
        assert child_pids() - before == servers  # the same processes served every call
        # Fewer samples than workers: the servers stay, the call uses what it needs.
        one = pool.route_batch(humaneval, ["HumanEval/0"], [HE0_LOGIC], completion_is_body=True)
        assert one[0].mode == "LOGIC" and pool.running == 2
    assert pool.closed and pool.running == 0
    assert wait_gone(servers)
    with pytest.raises(RuntimeError, match="closed"):
        pool.route_batch(humaneval, ["HumanEval/0"], [HE0_LOGIC], completion_is_body=True)
    pool.close()  # idempotent


def test_pool_routes_equal_a_fresh_run(humaneval):
    ids = ["HumanEval/0"] * 4 + [f"HumanEval/{i}" for i in range(1, 5) for _ in range(2)]
    bodies = BODIES + ["    return None\n", HE0_SYNTAX] * 4
    samples = [egca.Sample(pid, b, True) for pid, b in zip(ids, bodies)]
    fresh = _egca.route_samples(humaneval, samples, workers=2)
    with egca.RoutePool(workers=2) as pool:
        pooled = pool.route_batch(humaneval, samples=samples)
        pooled_again = pool.route_batch(humaneval, samples=samples, timeout=3.0)
    assert records(pooled) == records(fresh)
    assert [r.verdicts for r in pooled] == [r.verdicts for r in fresh]
    assert [r.mode for r in pooled_again] == [r.mode for r in fresh]


def test_route_batch_reuses_its_default_pool(humaneval):
    egca.close_pools()
    egca.route_batch(humaneval, ["HumanEval/0"] * 2, BODIES[:2], workers=1,
                     completion_is_body=True)
    pool = egca._default_pools[1]
    for _ in range(2):
        routes = egca.route_batch(humaneval, ["HumanEval/0"] * 2, BODIES[:2], workers=1,
                                  completion_is_body=True)
        assert [r.mode for r in routes] == ["CORRECT", "LOGIC"]
    assert egca._default_pools[1] is pool and pool._pool.started == 1
    mine = egca.RoutePool(workers=1)
    routes = egca.route_batch(humaneval, ["HumanEval/0"], [HE0_SYNTAX], pool=mine,
                              completion_is_body=True)
    assert routes[0].mode == "SYNTAX" and mine.running == 1
    egca.close_pools()
    assert pool.closed and mine.closed and not egca._default_pools
    # A later call starts a new default pool.
    routes = egca.route_batch(humaneval, ["HumanEval/0"], [HE0_CORRECT], workers=1,
                              completion_is_body=True)
    assert routes[0].mode == "CORRECT" and egca._default_pools[1] is not pool
    with pytest.raises(TypeError, match="RoutePool"):
        egca.route_batch(humaneval, ["HumanEval/0"], [HE0_CORRECT], pool="pool")
    with pytest.raises(ValueError, match="workers"):
        egca.RoutePool(workers=-1)
    with pytest.raises(TypeError, match="workers"):
        egca.RoutePool(workers=1.5)


def test_ctrl_c_leaves_the_pool_usable(humaneval):
    ids = [f"HumanEval/{i}" for i in range(164)] * 3
    bodies = [f"    return None  # {i}\n" for i in range(len(ids))]
    with egca.RoutePool(workers=2) as pool:
        pool.route_batch(humaneval, ["HumanEval/0"] * 2, BODIES[:2], completion_is_body=True)
        servers = child_pids()
        # 492 programs take seconds on any machine: the signal comes while they run.
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            pool.route_batch(humaneval, ids, bodies, completion_is_body=True)
        routes = pool.route_batch(humaneval, ["HumanEval/0"] * 4, BODIES, completion_is_body=True)
        assert [r.mode for r in routes] == ["CORRECT", "LOGIC", "SYNTAX", "LOGIC"]
        assert pool._pool.started == 2 and servers <= child_pids()


def test_fork_child_leaves_the_parents_servers_alone(humaneval):
    with egca.RoutePool(workers=1) as pool:
        pool.route_batch(humaneval, ["HumanEval/0"], [HE0_LOGIC], completion_is_body=True)
        servers = child_pids()
        assert len(servers) >= 1
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its own server, then close() and exit as a program does
            code = 1
            try:
                os.close(r)
                routes = pool.route_batch(humaneval, ["HumanEval/0"], [HE0_SYNTAX],
                                          completion_is_body=True)
                mine = child_pids()
                pool.close()
                egca.close_pools()
                # started counts the parent's executor and the child's own.
                checks = (routes[0].mode == "SYNTAX", pool._pool.started == 2, len(mine) >= 1,
                          wait_gone(mine))
                os.write(w, b"ok" if all(checks) else repr(checks).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        reply = os.read(r, 200)
        os.close(r)
        assert status == 0 and reply == b"ok"
        assert all(alive(p) for p in servers)  # not stopped by the child
        routes = pool.route_batch(humaneval, ["HumanEval/0"], [HE0_CORRECT],
                                  completion_is_body=True)
        assert routes[0].mode == "CORRECT" and pool._pool.started == 1


HOST = textwrap.dedent("""
    import os, sys, time
    import egca
    problems = egca.load_problems(sys.argv[1])
    body = "    return None\\n"
    egca.route_batch(problems, ["HumanEval/0"] * 2, [body, body], workers=2,
                     completion_is_body=True)
    with open("/proc/self/task/%d/children" % os.getpid()) as f:
        print(" ".join(f.read().split()), flush=True)
    if sys.argv[2] == "exit":
        sys.exit(0)  # no close(): atexit stops the servers
    ids = ["HumanEval/%d" % i for i in range(164)] * 20
    print("routing", flush=True)
    egca.route_batch(problems, ids, [body] * len(ids), workers=2, completion_is_body=True)
""")


@pytest.mark.parametrize("how", ["exit", "sigint", "sigkill"])
def test_no_process_outlives_the_host(how):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    proc = subprocess.Popen([sys.executable, "-c", HOST, str(HUMANEVAL), how], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        servers = [int(p) for p in proc.stdout.readline().split()]
        assert len(servers) >= 2, proc.stderr.read()
        if how != "exit":
            assert proc.stdout.readline().strip() == "routing"
            proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if how == "exit":
        assert code == 0
    elif how == "sigint":
        assert code != 0 and "KeyboardInterrupt" in proc.stderr.read()
    # Servers (and their sandboxed children) end with the host, however it ended.
    assert wait_gone(servers), [p for p in servers if alive(p)]
