#!/usr/bin/env python3
"""Load test of egca-serve against egca-batch: same CodeT samples, same --workers, run back to
back in this script (egca-batch, server, egca-batch) so load from others hits both alike.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/serve_load.py \
        [--samples 2000] [--clients 16] [--batch 16] [--workers 2]

The samples (bench/python/codet_subset.py: evenly spaced CodeT HumanEval samples) are
sorted by problem and cut into requests of --batch samples (one trainer micro-batch: a
prompt's group lands in one request); --clients threads send them concurrently to
POST /route on 127.0.0.1. Checks: every sample answered exactly once, every record equal to
egca-batch's (timing, origin and dup aside), after the run no executor busy and the queue
empty. Prints p50/p99 request latency, samples/s of the server and of egca-batch, the
ratio, the load average before/after; one JSON line at the end.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from egca.client import RemoteRouter  # noqa: E402  (PYTHONPATH=build/python)
from codet_subset import BUILD, EGCA_BATCH, HUMANEVAL, comparable, read_store, write_subset  # noqa: E402

SERVE = BUILD / "tools" / "egca-serve" / "egca-serve"
HOST = "127.0.0.1"
IGNORED = ("dup", "sample_id")


def batch_run(subset: str, store: str, workers: int) -> tuple[float, float, dict]:
    t0 = time.perf_counter()
    done = subprocess.run([str(EGCA_BATCH), "run", "--problems", str(HUMANEVAL), "--samples",
                           subset, "--store", store, "--workers", str(workers), "--progress",
                           "off"], check=True, capture_output=True, text=True, timeout=3600)
    proc = time.perf_counter() - t0
    m = re.search(r"programs routed\) in ([0-9.]+) s", done.stderr)
    run = float(m.group(1)) if m else proc
    return proc, run, read_store(store)


def post(port: int, body: dict) -> tuple[int, dict, float]:
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(HOST, port, timeout=3600)
    try:
        conn.request("POST", "/route", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read())
        return resp.status, data, time.perf_counter() - t0
    finally:
        conn.close()


def metrics(port: int) -> dict[str, float]:
    return RemoteRouter(f"http://{HOST}:{port}", timeout=60).metrics()


def serve_run(samples: list, workers: int, clients: int, batch: int) -> dict:
    proc = subprocess.Popen([str(SERVE), "--problems", str(HUMANEVAL), "--host", HOST, "--port",
                             "0", "--workers", str(workers)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready else ""
        if "listening on" not in line:
            raise RuntimeError(f"egca-serve did not start: {line!r}")
        port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
        order = sorted(range(len(samples)), key=lambda i: (samples[i].problem_id, i))
        requests = [order[i:i + batch] for i in range(0, len(order), batch)]
        answers: dict[int, list] = {}
        latencies = []

        def send(idx: list[int]):
            body = {"view": False, "samples": [
                {"problem": samples[i].problem_id, "completion": samples[i].completion,
                 "completion_is_body": True, "model": samples[i].model} for i in idx]}
            status, data, took = post(port, body)
            if status != 200:
                raise RuntimeError(f"HTTP {status}: {data}")
            return idx, data["results"], took

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(clients) as pool:
            for idx, results, took in pool.map(send, requests):
                latencies.append(took)
                if len(results) != len(idx):
                    raise RuntimeError(f"{len(idx)} samples sent, {len(results)} answered")
                for i, r in zip(idx, results):
                    answers.setdefault(i, []).append(r["record"])
        wall = time.perf_counter() - t0
        m = metrics(port)
        proc.terminate()
        rc = proc.wait(120)
        return {"answers": answers, "latencies": latencies, "wall": wall, "metrics": m,
                "exit": rc, "requests": len(requests)}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="egca-serve-load-") as tmp:
        subset = os.path.join(tmp, "codet.jsonl")
        _, samples = write_subset(subset, args.samples)
        b1_proc, b1_run, offline = batch_run(subset, os.path.join(tmp, "s1"), args.workers)
        served = serve_run(samples, args.workers, args.clients, args.batch)
        b2_proc, b2_run, offline2 = batch_run(subset, os.path.join(tmp, "s2"), args.workers)
    load_after = os.getloadavg()

    # Every sample answered once, equal to egca-batch's record of the same (key, copy).
    by_key: dict[tuple, dict] = {}
    for (problem, key, _dup), rec in offline.items():
        by_key.setdefault((problem, key), rec)
    lost = [i for i in range(len(samples)) if i not in served["answers"]]
    dup = [i for i, a in served["answers"].items() if len(a) != 1]
    by_key2: dict[tuple, dict] = {}
    for (problem, key, _dup), rec in offline2.items():
        by_key2.setdefault((problem, key), rec)
    strip = lambda r: {k: v for k, v in comparable(r).items() if k not in IGNORED}  # noqa: E731
    mismatched, details = [], []
    for i, (rec,) in ((i, a) for i, a in served["answers"].items() if len(a) == 1):
        want = by_key.get((rec["problem"], rec["key"]))
        if want is None or strip(rec) != strip(want) or rec["problem"] != samples[i].problem_id:
            mismatched.append(i)
            if want is not None:
                a, b = strip(rec), strip(want)
                diff = {k: (str(a.get(k))[:80], str(b.get(k))[:80]) for k in set(a) | set(b)
                        if a.get(k) != b.get(k)}
                again = by_key2.get((rec["problem"], rec["key"]))
                details.append({"sample": i, "problem": rec["problem"], "serve_vs_batch1": diff,
                                "batch2_equals_serve": again is not None and strip(again) == a,
                                "batch2_equals_batch1": again is not None and strip(again) == b})
    # egca-batch against itself (the same samples twice, back to back)
    batch_vs_batch = sum(1 for k, r in by_key.items() if k in by_key2 and strip(r) != strip(by_key2[k]))
    m = served["metrics"]
    batch_rate = statistics.mean([args.samples / b1_proc, args.samples / b2_proc])
    serve_rate = args.samples / served["wall"]
    out = {
        "samples": args.samples, "clients": args.clients, "batch": args.batch,
        "workers": args.workers, "requests": served["requests"],
        "lost": len(lost), "duplicated": len(dup), "mismatched": len(mismatched),
        "batch1_vs_batch2_programs_differing": batch_vs_batch,
        "p50_s": round(pct(served["latencies"], 0.50), 3),
        "p99_s": round(pct(served["latencies"], 0.99), 3),
        "serve_wall_s": round(served["wall"], 2),
        "serve_samples_per_s": round(serve_rate, 2),
        "batch_process_s": [round(b1_proc, 2), round(b2_proc, 2)],
        "batch_run_s": [round(b1_run, 2), round(b2_run, 2)],
        "batch_samples_per_s": round(batch_rate, 2),
        "ratio": round(serve_rate / batch_rate, 3),
        "busy_after": m.get("egca_serve_executors_busy"),
        "queue_after": m.get("egca_serve_queue_depth"),
        "jobs_routed": m.get('egca_serve_jobs_total{outcome="routed"}'),
        "server_exit": served["exit"],
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }
    print(f"{'':28} {'wall s':>8} {'samples/s':>10}")
    print(f"{'egca-batch (process, 1st)':28} {b1_proc:8.2f} {args.samples / b1_proc:10.2f}")
    print(f"{'egca-serve, 16 clients':28} {served['wall']:8.2f} {serve_rate:10.2f}")
    print(f"{'egca-batch (process, 2nd)':28} {b2_proc:8.2f} {args.samples / b2_proc:10.2f}")
    print(f"ratio serve / batch: {out['ratio']:.3f}; request latency p50 {out['p50_s']} s, "
          f"p99 {out['p99_s']} s ({served['requests']} requests of {args.batch})")
    print(f"lost {len(lost)}, duplicated {len(dup)}, different from egca-batch {len(mismatched)}; "
          f"load average {load_before[0]:.2f} -> {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    for d in details:
        print("differs:", json.dumps(d))
    print(json.dumps(out))
    ok = not lost and not dup and not mismatched and out["busy_after"] == 0 and \
        out["queue_after"] == 0 and served["exit"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
