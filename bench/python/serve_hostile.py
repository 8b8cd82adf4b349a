#!/usr/bin/env python3
"""Hostile clients against an egca-serve binary, old or new (issue 38): how long /healthz
takes while 200 idle or 40 slow connections are open, and what a 64 MiB chunked body with
--max-body 1 MiB costs the server. Only the options every egca-serve has are used, so the
same script measures the cpp-httplib server of before and the Beast one of now:

    /usr/bin/python3 bench/python/serve_hostile.py --serve build/tools/egca-serve/egca-serve
    /usr/bin/python3 bench/python/serve_hostile.py --serve /path/to/old/egca-serve

127.0.0.1 only; every wait bounded (a probe gives up after --probe-timeout seconds). Prints
one JSON line: per scenario the probes' max and median latency and how many timed out, the
chunked body's bytes taken, the server's RSS before and at its peak.
"""
from __future__ import annotations

import argparse
import http.client
import json
import pathlib
import select
import socket
import statistics
import subprocess
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "tests" / "fixtures" / "batch" / "humaneval5.jsonl"
HOST = "127.0.0.1"


def rss_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def probe(port: int, timeout: float) -> float | None:
    t0 = time.monotonic()
    try:
        conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        resp.read()
        conn.close()
        return time.monotonic() - t0 if resp.status == 200 else None
    except OSError:
        return None


def probes_during(port: int, seconds: float, timeout: float) -> dict:
    lat, lost = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = probe(port, timeout)
        if t is None:
            lost += 1
        else:
            lat.append(t)
        time.sleep(0.1)
    return {"probes": len(lat) + lost, "timed_out": lost,
            "max_s": round(max(lat), 4) if lat else None,
            "median_s": round(statistics.median(lat), 4) if lat else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", required=True)
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each scenario")
    ap.add_argument("--probe-timeout", type=float, default=5.0)
    a = ap.parse_args()
    proc = subprocess.Popen([a.serve, "--problems", str(PROBLEMS), "--host", HOST, "--port", "0",
                             "--workers", "1", "--max-body", str(1 << 20)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else ""
    port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
    out: dict = {"binary": a.serve, "rss_start_kib": rss_kib(proc.pid, "VmRSS")}
    out["quiet"] = probes_during(port, 1.0, a.probe_timeout)

    socks = [socket.create_connection((HOST, port), timeout=30) for _ in range(200)]
    out["idle200"] = probes_during(port, a.seconds, a.probe_timeout)
    for s in socks:
        s.close()
    time.sleep(1)

    stop = threading.Event()

    def slowloris():
        try:
            with socket.create_connection((HOST, port), timeout=30) as s:
                s.sendall(b"POST /route HTTP/1.1\r\nHost: x\r\n")
                while not stop.is_set():
                    s.sendall(b"X")
                    time.sleep(0.5)
        except OSError:
            pass

    threads = [threading.Thread(target=slowloris, daemon=True) for _ in range(40)]
    for t in threads:
        t.start()
    out["slow40"] = probes_during(port, a.seconds, a.probe_timeout)
    stop.set()
    for t in threads:
        t.join(10)
    time.sleep(1)

    sent = 0
    with socket.create_connection((HOST, port), timeout=10) as s:
        s.sendall(b"POST /route HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        try:
            while sent < (64 << 20):
                s.sendall(chunk)
                sent += 65536
            s.sendall(b"0\r\n\r\n")
            s.settimeout(30)
            answer = s.recv(200)
        except OSError:
            answer = b""
    out["chunked64m"] = {"bytes_taken_mib": round(sent / (1 << 20), 1),
                         "status": answer.split(b"\r\n")[0].decode(errors="replace")}
    out["rss_peak_kib"] = rss_kib(proc.pid, "VmHWM")
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
