"""egca-serve end to end: the server on a loopback port the test picks (--port 0), every
endpoint compared with egca-batch's records for the same samples, every bad input, the
queue and time limits, SIGTERM during a batch, a client that hangs up mid-request.

Only 127.0.0.1 is contacted; every wait is bounded."""
from __future__ import annotations

import concurrent.futures
import hashlib
import http.client
import json
import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("EGCA_BINARY_DIR", ROOT / "build"))
SERVE = BUILD / "tools" / "egca-serve" / "egca-serve"
BATCH = BUILD / "tools" / "egca-batch" / "egca-batch"
FIXTURES = ROOT / "tests" / "fixtures" / "batch"
PROBLEMS = FIXTURES / "humaneval5.jsonl"
SAMPLES = FIXTURES / "codet5x10.jsonl"
HOST = "127.0.0.1"
WAIT = 120.0  # seconds: bound of every wait (a loaded 2-core VM is slow, never this slow)

# Candidates that attack the host; the sandbox must contain them exactly as egca-run does.
PWNED = f"/tmp/egca-serve-test-pwned-{os.getpid()}"
HOSTILE = [
    # writes outside its sandbox, then kills its parent
    "    import os\n    open(%r, 'w').write('x')\n    os.kill(os.getppid(), 9)\n    return False\n"
    % PWNED,
    # fork bomb
    "    import os\n    while True:\n        os.fork()\n",
    # eats memory
    "    x = []\n    while True:\n        x.append(' ' * 10**7)\n",
    # floods stdout
    "    while True:\n        print('y' * 10000)\n",
]
SPIN = "    while True:\n        pass\n"  # never finishes: runs into the per-test timeout


def read_samples() -> list[dict]:
    with open(SAMPLES) as f:
        return [json.loads(line) for line in f]


def all_samples() -> list[dict]:
    """The CodeT fixture plus hostile bodies for HumanEval/0."""
    out = read_samples()
    for i, body in enumerate(HOSTILE):
        out.append({"problem_id": "HumanEval/0", "completion": body, "completion_is_body": True,
                    "model": "hostile", "sample_id": f"hostile#{i}"})
    return out


def sample_key(s: dict) -> str:
    """egca-batch's sample key (batch::SampleKey), computed independently: SHA-256 of
    model, how the completion is read and the completion, each length-prefixed."""
    if s.get("completion_is_body") is None:
        read = "detect"
    else:
        read = "body" if s["completion_is_body"] else "program"
    model, completion = s.get("model", "").encode(), s["completion"].encode()
    text = (b"egca-sample/2\nmodel %d:" % len(model) + model +
            b"\nread %s\ncompletion %d:" % (read.encode(), len(completion)) + completion)
    return hashlib.sha256(text).hexdigest()


IGNORED = ("grade_seconds", "localize_seconds", "shared_result", "crc", "type", "origin", "dup",
           "sample_id")


def comparable(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in IGNORED}


class Server:
    """egca-serve on 127.0.0.1, a port of the kernel's choosing."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [str(SERVE), "--problems", str(PROBLEMS), "--host", HOST, "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], WAIT)
        line = self.proc.stdout.readline() if ready else ""
        if "listening on http://" not in line:
            self.proc.kill()
            raise RuntimeError(f"egca-serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])

    def request(self, method: str, path: str, body=None, timeout: float = WAIT):
        """(status, parsed JSON or text). body: dict (JSON), bytes (raw) or None."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
            ctype = resp.getheader("Content-Type", "")
            return resp.status, (json.loads(text) if "json" in ctype else text)
        finally:
            conn.close()

    def post(self, path: str, body, **kw):
        return self.request("POST", path, body, **kw)

    def metrics(self) -> dict[str, float]:
        status, text = self.request("GET", "/metrics")
        assert status == 200
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def wait_for(self, predicate, what: str):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            m = self.metrics()
            if predicate(m):
                return m
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}: {self.metrics()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def batch_records() -> dict:
    """egca-batch's records for all_samples(), by (problem, sample key)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "samples.jsonl")
        with open(path, "w") as f:
            for s in all_samples():
                f.write(json.dumps(s) + "\n")
        store = os.path.join(tmp, "store")
        subprocess.run([str(BATCH), "run", "--problems", str(PROBLEMS), "--samples", path,
                        "--store", store, "--workers", "2", "--progress", "off"],
                       check=True, capture_output=True, timeout=1800)
        out = {}
        with open(os.path.join(store, "results.jsonl")) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("type") == "sample":
                    out.setdefault((rec["problem"], rec["key"]), rec)
        problems = {}
        with open(os.path.join(store, "results.jsonl")) as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("type") == "problem":
                    problems[rec["problem"]] = rec
    # The server routes against given references only; the fixture's problems all have one.
    assert all(p["reference"] == "given" for p in problems.values()), problems
    return out


@pytest.fixture(scope="module")
def server():
    s = Server("--workers", "2")
    yield s
    assert s.stop() == 0


def test_route_matches_egca_batch(server, batch_records):
    samples = all_samples()
    status, out = server.post("/route", {"samples": [
        {"problem": s["problem_id"], "completion": s["completion"],
         "completion_is_body": s["completion_is_body"], "model": s["model"]} for s in samples]})
    assert status == 200, out
    results = out["results"]
    assert len(results) == len(samples)
    modes = set()
    for s, r in zip(samples, results):
        rec = r["record"]
        assert rec["key"] == sample_key(s)
        want = batch_records[(rec["problem"], rec["key"])]
        assert comparable(rec) == comparable(want), (s["sample_id"], rec, want)
        assert r["reward"] == pytest.approx(want["r_hat"] * (1 if want["i_c"] else 0))
        # egca-trace --json's document: the same mode, and the candidate routed
        assert r["route"]["mode"] == rec["mode"]
        modes.add(rec["mode"])
    assert {"LOGIC", "CORRECT"} <= modes  # the fixture has both (and spans to compare)
    assert any(r["record"]["earliest"] for r in results)
    assert not os.path.exists(PWNED), "a hostile candidate wrote outside its sandbox"
    assert server.request("GET", "/healthz")[0] == 200  # and the server lives


def test_get_reward_matches_egca_batch(server, batch_records):
    samples = read_samples()
    prompts = [f"<|user|>solve {s['problem_id']}<|assistant|>\n" for s in samples]
    status, out = server.post("/get_reward", {
        "query": [p + s["completion"] for p, s in zip(prompts, samples)],
        "prompts": prompts, "labels": [s["problem_id"] for s in samples]})
    assert status == 200, out
    assert set(out) == {"rewards", "scores", "extra_logs"}
    assert len(out["rewards"]) == len(samples) and out["scores"] == out["rewards"]
    logs = out["extra_logs"]
    modes = ["SYNTAX", "CONSTRAINT", "LOGIC", "CORRECT"]
    for i, s in enumerate(samples):
        want = batch_records[(s["problem_id"], sample_key(s))]
        assert out["rewards"][i] == pytest.approx(want["r_hat"] * (1 if want["i_c"] else 0))
        assert modes[logs["egca_mode"][i]] == want["mode"]
        assert logs["egca_r_hat"][i] == pytest.approx(want["r_hat"])
        span = want["earliest"]["completion"] if want["earliest"] else None
        assert [logs["egca_earliest_begin"][i], logs["egca_earliest_end"][i]] == \
            ([span[0], span[1]] if span else [-1, -1])
    for v in logs.values():
        assert len(v) == len(samples) and all(isinstance(x, (int, float)) for x in v)


def test_get_reward_inline_label(server):
    ref = "def add(a, b):\n    return a + b\n"
    tests = [{"kind": "call", "function": "add", "args": [1, 2], "expected": 3},
             {"kind": "call", "function": "add", "args": [2, 2], "expected": 4}]
    label = json.dumps({"reference": ref, "tests": tests, "completion_is_body": False})
    wrong = "def add(a, b):\n    if a == 1:\n        return a + b\n    return a - b\n"
    status, out = server.post("/get_reward", {"query": ["Q: add\n" + ref, "Q: add\n" + wrong],
                                              "prompts": ["Q: add\n"] * 2,
                                              "labels": [label, label]})
    assert status == 200, out
    assert out["rewards"] == [1.0, 0.5]
    assert out["extra_logs"]["egca_mode"] == [3, 2]  # CORRECT, LOGIC


def test_token_advantages_match_the_python_package(server):
    egca = pytest.importorskip("egca")
    samples = read_samples()[:12]
    status, out = server.post("/route", {"view": False, "samples": [
        {"problem": s["problem_id"], "completion": s["completion"], "completion_is_body": True,
         "model": s["model"]} for s in samples]})
    assert status == 200, out
    records = [r["record"] for r in out["results"]]
    rewards = [r["reward"] for r in out["results"]]
    # Token offsets: 3-byte tokens over each completion (any tokenizer would do).
    offsets = [[[b, min(b + 3, len(s["completion"].encode()))]
                for b in range(0, len(s["completion"].encode()), 3)] for s in samples]
    groups = [s["problem_id"] for s in samples]
    status, credit = server.post("/token_advantages", {
        "records": records, "rewards": rewards, "groups": groups, "token_offsets": offsets})
    assert status == 200, credit
    # The Python package on the same samples: Routes, group advantages, token credit.
    problems = egca.load_problems(PROBLEMS)
    routers = {p: egca.Router(problems, p) for p in {s["problem_id"] for s in samples}}
    routes = [routers[s["problem_id"]].route(s["completion"], completion_is_body=True,
                                             model=s["model"]) for s in samples]
    assert [r.mode for r in routes] == [rec["mode"] for rec in records]
    adv = egca.group_advantages(rewards, groups)
    assert credit["advantages"] == pytest.approx(list(adv), abs=1e-12)
    import numpy as np
    ta = egca.token_advantages(routes, adv, token_offsets=[np.array(o) for o in offsets])
    for i, row in enumerate(credit["token_advantages"]):
        assert len(row) == ta.lengths[i]
        assert row == pytest.approx(list(ta.advantages[i][: len(row)]), abs=1e-6)
        assert credit["placement"][i] == ta.placement[i]
    assert "localized" in credit["placement"]  # some LOGIC sample got its span's tokens


def test_token_advantages_sign_aware_options(server):
    # Issue 37, by hand: three 4-byte tokens; LOGIC divergence on token 1, SYNTAX raising
    # statement on token 2 and cause on tokens 1-2. Advantages given: +1 (LOGIC), -1 (SYNTAX).
    records = [{"mode": "LOGIC", "earliest": [5, 6]},
               {"mode": "SYNTAX", "error": [8, 9], "cause": [4, 9]}]
    offsets = [[[0, 4], [4, 8], [8, 12]]] * 2
    def credit(**options):
        status, out = server.post("/token_advantages", {"records": records, "advantages": [1, -1],
                                                        "token_offsets": offsets, **options})
        assert status == 200, out
        return out["token_advantages"], out["mask"]
    assert credit()[0] == [[0, 1, 0], [0, 0, -1]]  # the paper's operator
    adv, mask = credit(positive_logic="prefix", syntax="cause")
    assert adv == [[1, 0, 0], [0, -0.5, -0.5]]
    assert mask == [[1, 0, 0], [0, 0.5, 0.5]]
    adv, _ = credit(positive_logic="uniform", syntax="uniform")
    assert adv == [pytest.approx([1 / 3] * 3), pytest.approx([-1 / 3] * 3)]
    assert credit(positive_logic="zero")[0][0] == [0, 0, 0]
    # Issue 36: min_confidence against the record's localization_confidence (0.4 < 0.5:
    # uniform, fallback low_confidence; a record without one keeps its span).
    low = [dict(records[0], localization_confidence=0.4), records[0]]
    status, out = server.post("/token_advantages", {"records": low, "advantages": [-1, -1],
                                                    "token_offsets": offsets, "min_confidence": 0.5})
    assert status == 200, out
    assert out["token_advantages"][0] == [pytest.approx(-1 / 3)] * 3
    assert out["token_advantages"][1] == [0, -1, 0]
    assert out["fallback"] == ["low_confidence", "none"]
    for bad in (1.5, -1, "high"):
        s, why = one_line_error(server.post("/token_advantages", {
            "records": low, "advantages": [-1, -1], "token_offsets": offsets, "min_confidence": bad}))
        assert s == 400 and why.startswith("min_confidence"), why
    for key, bad in (("positive_logic", "cause"), ("syntax", "prefix")):
        s, why = one_line_error(server.post("/token_advantages", {
            "records": records, "advantages": [1, -1], "token_offsets": offsets, key: bad}))
        assert s == 400 and why.startswith(f"{key}: expected") and f'"{bad}"' in why


def test_openrlhf_example(server):
    """examples/openrlhf/reward_client.py: OpenRLHF's call, then token credit."""
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "openrlhf" / "reward_client.py"),
                        f"http://{HOST}:{server.port}"], capture_output=True, text=True,
                       timeout=3 * WAIT)
    assert r.returncode == 0, r.stdout + r.stderr
    for mode in ("SYNTAX", "LOGIC", "CORRECT"):
        assert mode in r.stdout, r.stdout


def one_line_error(status_body):
    status, body = status_body
    assert isinstance(body, dict) and set(body) == {"error"}, body
    assert "\n" not in body["error"] and body["error"]
    return status, body["error"]


def test_bad_inputs(server):
    post = server.post
    s, why = one_line_error(post("/route", b'{"samples": [1, 2'))
    assert s == 400 and "not valid JSON" in why
    s, why = one_line_error(post("/route", b"[1, 2]"))
    assert s == 400 and "expected a JSON object" in why
    s, why = one_line_error(post("/get_reward", {"query": "x", "labels": []}))
    assert s == 400 and why.startswith("query: expected an array")
    s, why = one_line_error(post("/get_reward", {"query": [1], "labels": ["HumanEval/0"]}))
    assert s == 400 and why.startswith("query[0]: expected a string")
    s, why = one_line_error(post("/get_reward", {"query": ["a"], "labels": ["HumanEval/0", "x"]}))
    assert s == 400 and "labels has 2 entries" in why
    s, why = one_line_error(post("/get_reward", {"query": ["ab"], "prompts": ["x"],
                                                 "labels": ["HumanEval/0"]}))
    assert s == 400 and "does not start with prompts[0]" in why
    s, why = one_line_error(post("/route", {"samples": [{"problem": "HumanEval/0"}]}))
    assert s == 400 and 'missing field "completion"' in why
    s, why = one_line_error(post("/route", {"samples": [
        {"problem": "HumanEval/0", "completion": "x", "completion_is_body": "yes"}]}))
    assert s == 400 and "completion_is_body" in why
    s, why = one_line_error(post("/route", {"samples": [{"problem": "HumanEval/2",
                                                         "completion": "x"}]}))
    assert s == 404 and 'unknown problem "HumanEval/2"' in why and "did you mean" in why
    s, why = one_line_error(post("/get_reward", {"query": ["x"], "labels": ["HumanEval/99"]}))
    assert s == 404 and why.startswith("labels[0]: unknown problem")
    # non-UTF-8: raw bytes in a string, and a lone surrogate escape
    raw = b'{"samples": [{"problem": "HumanEval/0", "completion": "\xff\xfe"}]}'
    s, why = one_line_error(post("/route", raw))
    assert s == 400 and "not valid UTF-8" in why
    s, why = one_line_error(post("/route", b'{"samples": [{"problem": "HumanEval/0", '
                                           b'"completion": "\\udc80"}]}'))
    assert s == 400 and "not valid JSON" in why and "surrogate" in why
    s, why = one_line_error(post("/route", {"samples": [{"reference": "def f(:\n",
                                                         "tests": [], "completion": "x"}]}))
    assert s == 400 and "reference" in why
    s, why = one_line_error(post("/token_advantages", {"records": [{"mode": "WRONG"}],
                                                       "rewards": [1], "token_offsets": [[]]}))
    assert s == 400 and "mode" in why
    s, why = one_line_error(post("/token_advantages", {"records": [{"mode": "LOGIC"}],
                                                       "rewards": [1],
                                                       "token_offsets": [[[3, 1, 2]]]}))
    assert s == 400 and "token_offsets[0][0]" in why
    s, why = one_line_error(server.request("GET", "/route"))
    assert s == 405
    s, why = one_line_error(server.request("GET", "/nope"))
    assert s == 404 and "no endpoint" in why
    assert server.request("GET", "/healthz")[0] == 200
    m = server.metrics()
    assert m['egca_serve_requests_total{endpoint="/route",status="400"}'] >= 5
    assert m['egca_serve_requests_total{endpoint="/get_reward",status="404"}'] >= 1


def test_concurrent_requests_get_their_own_responses(server, batch_records):
    samples = read_samples()

    def one(s):
        status, out = server.post("/route", {"view": False, "samples": [
            {"problem": s["problem_id"], "completion": s["completion"],
             "completion_is_body": True, "model": s["model"]}]})
        return s, status, out

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for s, status, out in pool.map(one, samples[:24]):
            assert status == 200, out
            rec = out["results"][0]["record"]
            assert rec["program"].endswith(s["completion"]) and rec["problem"] == s["problem_id"]
            assert comparable(rec) == comparable(batch_records[(rec["problem"], rec["key"])])


def test_metrics_are_prometheus_text(server):
    status, text = server.request("GET", "/metrics")
    assert status == 200
    for name in ("egca_serve_requests_total", "egca_serve_request_duration_seconds",
                 "egca_serve_samples_total", "egca_serve_verdicts_total",
                 "egca_serve_queue_depth", "egca_serve_executors_busy"):
        assert f"# TYPE {name} " in text
    m = server.metrics()
    assert m['egca_serve_request_duration_seconds_bucket{endpoint="/route",le="+Inf"}'] == \
        m['egca_serve_request_duration_seconds_count{endpoint="/route"}']
    assert m['egca_serve_samples_total{mode="LOGIC"}'] > 0
    assert m["egca_serve_executors"] == 2


def spin_samples(n: int) -> list[dict]:
    # distinct programs (a comment each), so none is deduplicated
    return [{"problem": "HumanEval/0", "completion": SPIN + f"    # {i}\n",
             "completion_is_body": True} for i in range(n)]


def test_queue_limits():
    s = Server("--workers", "1", "--queue", "2", "--timeout", "1", "--max-body", "65536")
    try:
        big = {"samples": [{"problem": "HumanEval/0", "completion": "x" * 70000}]}
        status, why = one_line_error(s.post("/route", big))
        assert status == 413 and "--max-body 65536" in why
        status, why = one_line_error(s.post("/route", {"samples": spin_samples(3)}))
        assert status == 413 and "exceed the queue" in why
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(s.post, "/route", {"view": False, "samples": spin_samples(2)})
            s.wait_for(lambda m: m["egca_serve_executors_busy"] == 1 and
                       m["egca_serve_queue_depth"] == 1, "one job routing, one queued")
            status, why = one_line_error(s.post("/route", {"samples": spin_samples(2)}))
            assert status == 503 and why.startswith("queue full")
            status, out = first.result(WAIT)
            assert status == 200, out
            assert [r["record"]["verdict"] for r in out["results"]] == ["TIMEOUT", "TIMEOUT"]
    finally:
        assert s.stop() == 0


def test_request_time_budget():
    # The job runs at least its 3 s per-test limit; the request's budget is 1 s.
    s = Server("--workers", "1", "--timeout", "3", "--request-timeout", "1")
    try:
        status, why = one_line_error(s.post("/route", {"samples": spin_samples(1)}))
        assert status == 503 and "time budget of 1 s exceeded" in why, why
        m = s.wait_for(lambda m: m["egca_serve_executors_busy"] == 0, "the executor back")
        assert m["egca_serve_executors"] == 1
        status, out = s.post("/route", {"samples": [{"problem": "HumanEval/0",
                                                     "completion": "    return False\n",
                                                     "completion_is_body": True}]})
        assert status == 200 and out["results"][0]["record"]["r_hat"] < 1
    finally:
        assert s.stop() == 0


def test_sigterm_finishes_in_flight_requests():
    s = Server("--workers", "1", "--timeout", "1")
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(s.post, "/route", {"view": False, "samples": spin_samples(2)})
                   for _ in range(3)]
        s.wait_for(lambda m: m["egca_serve_in_flight_requests"] == 3, "3 requests in flight")
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        # new requests are refused while the in-flight ones finish
        try:
            status, why = one_line_error(s.post("/route", {"samples": spin_samples(1)},
                                                timeout=10))
            assert status == 503 and "shutting down" in why
        except ConnectionError:
            pass  # or the listening socket is already closed
        for f in futures:
            status, out = f.result(WAIT)
            assert status == 200, out
            assert [r["record"]["verdict"] for r in out["results"]] == ["TIMEOUT", "TIMEOUT"]
    s.proc.wait(WAIT)
    assert s.proc.returncode == 0, s.proc.stderr.read()


def test_client_disconnect_does_not_leak_an_executor():
    s = Server("--workers", "1", "--timeout", "1")
    try:
        body = json.dumps({"samples": spin_samples(1)}).encode()
        sock = socket.create_connection((HOST, s.port), timeout=WAIT)
        sock.sendall(b"POST /route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        s.wait_for(lambda m: m["egca_serve_executors_busy"] == 1, "the job routing")
        sock.close()  # the client hangs up mid-request
        m = s.wait_for(lambda m: m["egca_serve_executors_busy"] == 0 and
                       m["egca_serve_in_flight_requests"] == 0, "the executor back")
        assert m["egca_serve_executors"] == 1
        # and it serves the next request
        status, out = s.post("/route", {"view": False, "samples": spin_samples(1)})
        assert status == 200 and out["results"][0]["record"]["verdict"] == "TIMEOUT"
        assert s.metrics()['egca_serve_jobs_total{outcome="routed"}'] == 2
    finally:
        assert s.stop() == 0
