#!/usr/bin/env python3
"""Builds a real two-turn Murphy tree from the LDB debugging runs in the shared data.

Source: samples/ldb/ldb.tar.gz (FloridSleeves/LLMDebugger @ 49ac191f, Apache-2.0).
Turn 1: the seed programs of several models for one HumanEval task. Turn 2: for each seed,
the first repair of every recorded LDB run of that model that started from exactly that
seed (runs whose repair chains are identical are counted once). Rewards are the fraction of the
task's visible tests the program passed, read from the runs' recorded test feedback
(a list of the failing asserts with their real outputs), which also becomes the node's
feedback text. Nothing is executed here.

  python3 make_ldb_tree.py /path/to/ldb.tar.gz HumanEval/97 > ldb_humaneval97.json
"""
import json
import sys
import tarfile

MODELS = ["gpt-3.5-turbo-0613", "codellama", "starcoder", "gpt-4-1106-preview"]
# Which run folders debug which model's seeds (two models can emit the same seed text, so
# the seed text alone does not tell whose run it is).
RUN_DIRS = {
    "gpt-3.5-turbo-0613": ("/gpt-3.5-turbo-0613", "/level_"),
    "codellama": ("/codellama/",),
    "starcoder": ("/starcoder/",),
    "gpt-4-1106-preview": ("/gpt-4-seed/",),
}


def main():
    archive, task = sys.argv[1], sys.argv[2]
    seeds, runs = {}, []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name
            if not name.endswith(".jsonl"):
                continue
            is_seed = "/humaneval/seed/" in name
            is_run = name.startswith("results/ldb/humaneval/")
            if not (is_seed or is_run):
                continue
            for line in tar.extractfile(member).read().decode("utf-8").split("\n"):
                if not line.strip():
                    continue
                record = json.loads(line)
                if record.get("task_id") != task:
                    continue
                if is_seed:
                    seeds[name.split("/")[-2]] = record
                elif len(record.get("implementations", [])) >= 1:
                    runs.append((name, record))
    runs.sort(key=lambda r: r[0])

    def reward(record, i):
        failed = len(record["test_feedback"][i])
        return (len(record["given_tests"]) - failed) / len(record["given_tests"])

    def feedback(record, i):
        return "\n".join(record["test_feedback"][i])

    responses = []
    for model in MODELS:
        seed = seeds[model]["solution"]  # the seed files keep the program under "solution"
        mine = [(name, r) for name, r in runs
                if r["seed"] == seed and any(d in name for d in RUN_DIRS[model])]
        first = [r for _, r in mine]
        if not first:
            continue
        node = {
            "source": model + " seed",
            "completion": seed,
            "reward": reward(first[0], 0),
            "feedback": feedback(first[0], 0),
        }
        if node["reward"] < 1.0:
            children, seen = [], set()
            for name, r in mine:
                if len(r["implementations"]) < 2 or len(r["test_feedback"]) < 2:
                    continue
                chain = json.dumps(r["implementations"])
                if chain in seen:
                    continue
                seen.add(chain)
                children.append({
                    "source": name,
                    "completion": r["implementations"][1],
                    "reward": reward(r, 1),
                    "feedback": feedback(r, 1),
                })
            if children:
                node["refinements"] = children
        responses.append(node)
    json.dump({
        "task": seeds[MODELS[0]]["prompt"],
        "max_reward": 1.0,
        "note": "Real tree built by make_ldb_tree.py from LDB runs for " + task,
        "responses": responses,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
