"""A client of egca-serve (docs/serve.md), standard library only (urllib): for trainer nodes
that should not fork sandboxes themselves.

    from egca.client import RemoteRouter
    rr = RemoteRouter("http://verifier:8000")
    out = rr.route([{"problem": "HumanEval/0", "completion": body}])
    out[0]["record"]["mode"], out[0]["record"]["earliest"]       # egca-batch's record
    rr.get_reward(queries, prompts, labels)["rewards"]           # OpenRLHF's shape
    rr.token_advantages([o["record"] for o in out], rewards=[1.0], token_offsets=[offs])

Every method raises RemoteError (HTTP status + the server's one-line reason) when the
server refuses a request, and OSError subclasses (URLError, timeout) when it cannot be
reached.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Optional, Sequence

__all__ = ["RemoteError", "RemoteRouter"]


class RemoteError(Exception):
    """egca-serve answered with an HTTP error: .status (400, 404, 413, 503, ...) and
    .reason (the server's one-line reason)."""

    def __init__(self, status: int, reason: str):
        super().__init__(f"HTTP {status}: {reason}")
        self.status = status
        self.reason = reason


class RemoteRouter:
    """egca's routing, reward and token credit on an egca-serve instance at `url`
    ("http://host:port"). timeout: seconds per HTTP request (a batch waits for all of its
    samples)."""

    def __init__(self, url: str, timeout: float = 600.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.timeout = timeout

    # ------------------------------------------------------------------ transport
    def _call(self, method: str, path: str, body: Optional[dict] = None) -> bytes:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                reason = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                reason = text.strip() or e.reason
            raise RemoteError(e.code, reason) from None

    def _post(self, path: str, body: dict) -> Any:
        return json.loads(self._call("POST", path, body))

    # ------------------------------------------------------------------ endpoints
    def health(self) -> dict:
        """GET /healthz: {"status": "ok", "workers", "busy", "queue_depth", ...}."""
        return json.loads(self._call("GET", "/healthz"))

    def metrics(self) -> dict[str, float]:
        """GET /metrics parsed: {"name{labels}": value} of every sample line."""
        out = {}
        for line in self._call("GET", "/metrics").decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def route(self, samples: Sequence[dict], *, view: bool = True) -> list[dict]:
        """POST /route. samples: {"problem": id (or {"reference", "tests"}), "completion": str,
        "completion_is_body": bool | None, "model": str}. Returns one {"record": egca-batch's
        record, "reward": R, "route": egca-trace --json's document (view=True)} per sample."""
        return self._post("/route", {"samples": list(samples), "view": view})["results"]

    def route_completions(self, problem_ids: Sequence[str], completions: Sequence[str], *,
                          completion_is_body: Optional[bool] = None,
                          view: bool = False) -> list[dict]:
        """route() of problem ids + completions (as egca.route_batch takes them)."""
        if len(problem_ids) != len(completions):
            raise ValueError(f"problem_ids and completions differ in length "
                             f"({len(problem_ids)} != {len(completions)})")
        return self.route([{"problem": p, "completion": c, "completion_is_body": completion_is_body}
                           for p, c in zip(problem_ids, completions)], view=view)

    def get_reward(self, query: Sequence[str], prompts: Optional[Sequence[str]],
                   labels: Sequence[Any]) -> dict:
        """POST /get_reward, OpenRLHF's remote reward model call: query = prompt + response,
        labels = problem ids (or {"reference", "tests"} objects). Returns {"rewards",
        "scores", "extra_logs"}."""
        body = {"query": list(query), "labels": list(labels)}
        if prompts is not None:
            body["prompts"] = list(prompts)
        return self._post("/get_reward", body)

    def token_advantages(self, records: Sequence[dict], *, token_offsets: Sequence[Any],
                         rewards: Optional[Sequence[float]] = None,
                         advantages: Optional[Sequence[float]] = None,
                         groups: Optional[Sequence[Any]] = None, target: str = "earliest",
                         soft_weight: float = 1.0, seed: int = 0,
                         normalization: str = "mean_std", eps: float = 1e-6,
                         char_offsets: bool = False,
                         completions: Optional[Sequence[str]] = None) -> dict:
        """POST /token_advantages: the credit operator (credit::GroupAdvantages on the rewards
        per group, or the given advantages; then credit::AssignTokenCredit) on records from
        route(). token_offsets: [[begin, end], ...] per record (completion bytes, or
        characters with char_offsets=True and the completions). Returns {"advantages": [A_i],
        "token_advantages": [[a_it]], "mask", "placement", "fallback", ...}."""
        if (rewards is None) == (advantages is None):
            raise TypeError("give rewards= or advantages=, exactly one")
        body: dict[str, Any] = {
            "records": list(records),
            "token_offsets": [[[int(b), int(e)] for b, e in offs] for offs in token_offsets],
            "target": target, "soft_weight": soft_weight, "seed": seed,
            "normalization": normalization, "eps": eps, "char_offsets": char_offsets}
        if rewards is not None:
            body["rewards"] = [float(r) for r in rewards]
        else:
            body["advantages"] = [float(a) for a in advantages]
        if groups is not None:
            body["groups"] = list(groups)
        if completions is not None:
            body["completions"] = list(completions)
        return self._post("/token_advantages", body)
