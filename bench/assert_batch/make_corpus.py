#!/usr/bin/env python3
"""Writes the corpus assert_batch_agreement compares on (one program per line:
{"id", "source", "tests": [assert, ...], "setup"}), from public data and the learns family:

  mbpp      MBPP's canonical programs with their test_list and challenge_test_list
  mapcoder  real LLM programs for MBPP (MapCoder's published ChatGPT/GPT-4 runs: the final
            program of each problem), on MBPP's own asserts
  learns    the learns family (examples/learns/make_family.py): every near-miss and every
            reference, on its problem's six asserts

    make_corpus.py OUT.jsonl [--data DIR] [--family DIR] [--sets mbpp,mapcoder,learns]
                   [--max-per-set N]

--data: the shared data folder (default ../shared/data relative to the project root);
--family: a make_family.py output folder (made in a temporary folder when missing).
"""
import argparse, ast, json, os, subprocess, sys, tarfile, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def mbpp_problems(data):
    problems = {}
    with open(os.path.join(data, "mbpp", "mbpp.jsonl")) as f:
        for line in f:
            p = json.loads(line)
            problems[p["task_id"]] = p
    return problems


def mapcoder_programs(data, problems):
    out = []
    path = os.path.join(data, "samples", "mapcoder", "final-results.tar.gz")
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            if not m.isfile() or "/MBPP/" not in m.name or not m.name.endswith(".jsonl"):
                continue
            run = os.path.basename(m.name)[:-len(".jsonl")]
            for n, line in enumerate(tar.extractfile(m).read().decode("utf-8", "replace").splitlines()):
                try:
                    r = json.loads(line)
                    task = int(r["name"].split("_")[1])
                    codes = r["source_codes"]
                    if isinstance(codes, str):
                        codes = ast.literal_eval(codes)
                except (ValueError, KeyError, IndexError, SyntaxError):
                    continue
                if task not in problems or not codes:
                    continue
                p = problems[task]
                out.append(dict(id=f"mapcoder/{run}/{task}", source=codes[-1],
                                tests=p["test_list"] + p.get("challenge_test_list", []),
                                setup=p.get("test_setup_code", "")))
    return out


def learns_programs(family):
    problems = {}
    for split in ("train", "heldout"):
        with open(os.path.join(family, f"{split}.jsonl")) as f:
            for line in f:
                p = json.loads(line)
                problems[f"mbpp/{p['task_id']}"] = p
    out = [dict(id=f"learns/ref/{pid}", source=p["code"], tests=p["test_list"], setup="")
           for pid, p in problems.items()]
    with open(os.path.join(family, "near_misses.jsonl")) as f:
        for n, line in enumerate(f):
            m = json.loads(line)
            p = problems.get(m["problem_id"])
            if p is not None:
                out.append(dict(id=f"learns/miss/{n}", source=m["program"], tests=p["test_list"],
                                setup=""))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--family", default=None)
    ap.add_argument("--sets", default="mbpp,mapcoder,learns")
    ap.add_argument("--max-per-set", type=int, default=0,
                    help="at most this many programs of each set, evenly spaced (0: all)")
    a = ap.parse_args()
    sets = a.sets.split(",")
    rows = []
    problems = mbpp_problems(a.data) if ("mbpp" in sets or "mapcoder" in sets) else {}
    if "mbpp" in sets:
        rows += [dict(id=f"mbpp/{t}", source=p["code"],
                      tests=p["test_list"] + p.get("challenge_test_list", []),
                      setup=p.get("test_setup_code", "")) for t, p in sorted(problems.items())]
    if "mapcoder" in sets:
        rows += mapcoder_programs(a.data, problems)
    if "learns" in sets:
        family = a.family
        if family is None or not os.path.exists(os.path.join(family, "near_misses.jsonl")):
            family = family or tempfile.mkdtemp(prefix="learns-family-")
            subprocess.run([sys.executable, os.path.join(ROOT, "examples", "learns", "make_family.py"),
                            family], check=True, stdout=subprocess.DEVNULL)
        rows += learns_programs(family)
    if a.max_per_set > 0:
        by_set = {}
        for r in rows:
            by_set.setdefault(r["id"].split("/")[0], []).append(r)
        rows = []
        for name, rs in by_set.items():
            step = max(1, len(rs) // a.max_per_set)
            rows += rs[::step][:a.max_per_set]
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    counts = {}
    for r in rows:
        counts[r["id"].split("/")[0]] = counts.get(r["id"].split("/")[0], 0) + 1
    print(json.dumps(dict(programs=len(rows), tests=sum(len(r["tests"]) for r in rows), **counts)))


if __name__ == "__main__":
    main()
