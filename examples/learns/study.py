#!/usr/bin/python3
"""The credit study (issue 23), docs/results/credit-study/PREREGISTRATION.md, as one resumable command.

    examples/learns/study.py [--quick] [--jobs 2] [--work DIR] [--results DIR] [--dry-run]
                             [--blocks tuning,primary,secondary,v2] (also: regime, starts)
                             [--variants v0,v1,v2] [--pretrain-steps N]

Runs, in the pre-registered order: the learning-rate sweep on tuning seeds (v0 with a
validation split), the primary comparison (earliest and uniform, v0 and v1, seeds 1..10,
interleaved by seed), the secondary arms (earliest-unrenormalized, last, random; v0 and v1,
seeds 1..5), then the exploratory v2 block (five arms, seeds 1..5).

Paired design: per (variant, seed) one pre-trained start (learns_pretrain --seed S) shared by
every arm of that seed and evaluated once (arm "start"); every arm of a seed runs with
run.seed = S, so it sees the same prompt order and the same evaluation sampling stream.

Resumable: kill it (Ctrl-C, SIGTERM, or the session ending) and run the same command again.
  - a finished run has its result JSON (RESULTS/runs/*.json, RESULTS/tuning/*.json) and is
    never run again; a pre-training is finished when its pretrain.json exists;
  - an unfinished run continues from its newest checkpoint (run.save_every 10) with
    egca-train --resume; checkpoints, run directories and pre-trained models live under
    WORK (default runs/credit-study, ignored by git);
  - a lock (WORK/study.lock, held by the driver and inherited by its runs) refuses a second
    driver while the first one or any run it started is still alive.
The per-arm learning rates are picked from the sweep's results (RESULTS/tuning.json) once
every tuning run has finished; runs after the sweep wait for it.

Progress: one line per event and every 60 s: runs done / total, the rate, the ETA (the
mean wall time of the runs finished this session, divided among the parallel jobs).

--quick: tiny sizes (2 steps of 2 prompts x G 4, 8 evaluation problems, 20 pre-training
steps, two seeds for the primary arms, one for the rest, one tuning seed and two rates)
for the slow-labelled test; its results go to WORK/results, never to docs/.
--dry-run: print the plan (every task, what is done) and exit.

Exit status: 0 all done, 1 a run failed (the others went on; rerun to retry it), 2 bad
usage or another driver running.
"""
import argparse
import fcntl
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import report  # noqa: E402  (the learns report's localization scoring, shared)

ARMS = {  # arm name -> egca-train overrides (PREREGISTRATION.md, "Arms")
    "uniform": ["credit.target=uniform"],
    "earliest": ["credit.target=earliest"],
    "earliest-unrenormalized": ["credit.target=earliest", "credit.renormalize=false"],
    "last": ["credit.target=last"],
    "random": ["credit.target=random"],
}
PRIMARY_ARMS = ["uniform", "earliest"]
SECONDARY_ARMS = ["earliest-unrenormalized", "last", "random"]
TRAIN_KEYS = ["reward", "pass_all_tests", "mode/logic", "mode/correct", "update/kl", "kl", "grad_norm",
              "entropy", "entropy/divergent_tokens", "cancellation/divergent_share",
              "cancellation/divergent_token_share", "cancellation/net_over_gross",
              "localization/trigger_rate", "completions/mean_length", "completions/clipped_ratio",
              "time/step"]


def sizes(quick):
    """The fixed settings of every run (PREREGISTRATION.md and its amendments), or the --quick ones."""
    if quick:
        return dict(steps=2, prompts=2, group=4, eval_every=1, mid_samples=2, final_samples=4,
                    eval_limit=8, pretrain_steps={"v0": 20, "v1": 20, "v2": 20}, primary_seeds=[1, 2],
                    secondary_seeds=[1], tuning_seeds=[101], uniform_lrs=[3e-4, 1e-3], calib_steps=2,
                    v2_seeds=[1], save_every=1, max_new={"v0": 96, "v1": 96, "v2": 160}, regime_samples=2)
    # Amendment 4: v1 pre-trains 3000 steps; the rates come from a sweep of uniform's rate plus
    # per-step KL matching of the other arms (calib_steps-step runs at a constant rate).
    return dict(steps=100, prompts=8, group=8, eval_every=50, mid_samples=8, final_samples=24,
                eval_limit=-1, pretrain_steps={"v0": 1000, "v1": 3000, "v2": 1000},
                primary_seeds=list(range(1, 11)), secondary_seeds=list(range(1, 6)), tuning_seeds=[101, 102],
                uniform_lrs=[1e-4, 3e-4, 1e-3, 3e-3], calib_steps=10, v2_seeds=list(range(1, 6)), save_every=10,
                max_new={"v0": 96, "v1": 96, "v2": 160}, regime_samples=4)


SECONDARY_VARIANTS = ["v0"]  # amendment 4: the secondary arms run on v0 only
V2_ARMS = ["uniform", "earliest"]  # amendment 4: v2 (exploratory) runs the primary arms only
KL_TOLERANCE = 1.25  # amendment 4: a matched rate is kept when its KL is within this factor of uniform's


def fmt_lr(lr):
    return ("%g" % lr).replace("+", "")


class Study:
    def __init__(self, args):
        self.args = args
        self.z = sizes(args.quick)
        if args.pretrain_steps:
            self.z["pretrain_steps"] = {v: args.pretrain_steps for v in ("v0", "v1", "v2")}
        self.work = os.path.abspath(args.work or ("runs/credit-study-quick" if args.quick else "runs/credit-study"))
        default_results = os.path.join(self.work, "results") if args.quick else os.path.join(
            ROOT, "docs/results/credit-study")
        self.results = os.path.abspath(args.results or default_results)
        build = os.environ.get("EGCA_BUILD_DIR", os.path.join(ROOT, "build"))
        self.train_bin = os.path.join(build, "tools/egca-train/egca-train")
        self.pretrain_bin = os.path.join(build, "examples/learns/learns_pretrain")
        self.config = os.path.join(HERE, "learns.yaml")
        self.blocks = args.blocks.split(",")
        self.variants = args.variants.split(",") if args.variants else None
        self.failed = []
        self.command_name = "examples/learns/study.py"
        self.finished_times = []
        self.started = time.time()

    # ---- the plan -----------------------------------------------------------------------

    def family_dir(self, variant, validation):
        return os.path.join(self.work, "family-%s%s" % (variant, "-val" if validation else ""))

    def pretrain_args(self, variant, seed):
        return ["--steps", str(self.z["pretrain_steps"][variant]), "--batch", "16", "--lr", "5e-3", "--hidden", "64",
                "--layers", "2", "--seed", str(seed), "--threads", "1"]

    def pretrained_dir(self, variant, validation, seed):
        # The pre-training length is in the name: changing it never reuses an older model.
        return os.path.join(self.work, "pretrained", "%s%s-s%d-p%d" % (
            variant, "-val" if validation else "", seed, self.z["pretrain_steps"][variant]))

    def tasks(self):
        """Every task in the pre-registered order: (kind, dict)."""
        z = self.z
        out = []
        if "regime" in self.blocks:  # the near-correct regime check, on the first tuning seed
            for seed in z["tuning_seeds"]:
                for variant in ("v0", "v1", "v2"):
                    out.append(("pretrain", dict(variant=variant, validation=False, seed=seed)))
                    out.append(("start", dict(variant=variant, seed=seed, regime=True)))
        if "starts" in self.blocks:  # every shared start (pre-training + step-0 evaluation) first
            for seed in z["primary_seeds"]:
                for variant in ("v0", "v1"):
                    out.append(("pretrain", dict(variant=variant, validation=False, seed=seed)))
                    out.append(("start", dict(variant=variant, seed=seed)))
            for seed in z["v2_seeds"]:
                out.append(("pretrain", dict(variant="v2", validation=False, seed=seed)))
                out.append(("start", dict(variant="v2", seed=seed)))
        if "tuning" in self.blocks:  # amendment 4: uniform's sweep, then KL matching of the other arms
            for seed in z["tuning_seeds"]:
                out.append(("pretrain", dict(variant="v0", validation=True, seed=seed)))
                for lr in z["uniform_lrs"]:
                    out.append(("run", dict(variant="v0", validation=True, seed=seed, arm="uniform", lr=lr)))
            out.append(("choose_uniform", {}))
            for phase in (1, 2):
                for seed in z["tuning_seeds"]:
                    for arm in PRIMARY_ARMS + SECONDARY_ARMS:
                        if phase == 1 or arm != "uniform":
                            out.append(("calib", dict(variant="v0", validation=True, seed=seed, arm=arm,
                                                      phase=phase)))
        if any(b in self.blocks for b in ("primary", "secondary", "v2")):
            out.append(("choose_lr", {}))
        if "primary" in self.blocks:
            for seed in z["primary_seeds"]:
                for variant in ("v0", "v1"):
                    out.append(("pretrain", dict(variant=variant, validation=False, seed=seed)))
                    out.append(("start", dict(variant=variant, seed=seed)))
                    for arm in PRIMARY_ARMS:
                        out.append(("run", dict(variant=variant, validation=False, seed=seed, arm=arm)))
        if "secondary" in self.blocks:
            for seed in z["secondary_seeds"]:
                for variant in SECONDARY_VARIANTS:
                    out.append(("pretrain", dict(variant=variant, validation=False, seed=seed)))
                    out.append(("start", dict(variant=variant, seed=seed)))
                    for arm in SECONDARY_ARMS:
                        out.append(("run", dict(variant=variant, validation=False, seed=seed, arm=arm)))
        if "v2" in self.blocks:
            for seed in z["v2_seeds"]:
                out.append(("pretrain", dict(variant="v2", validation=False, seed=seed)))
                out.append(("start", dict(variant="v2", seed=seed)))
                for arm in V2_ARMS:
                    out.append(("run", dict(variant="v2", validation=False, seed=seed, arm=arm)))
        if self.variants is not None:  # --variants: the others wait (e.g. a variant being fixed)
            out = [(k, t) for k, t in out if k in ("choose_lr", "choose_uniform") or t.get("variant") in self.variants]
        seen, unique = set(), []
        for kind, t in out:
            key = self.key(kind, t)
            if key not in seen:
                seen.add(key)
                unique.append((kind, t))
        return unique

    def key(self, kind, t):
        if kind == "pretrain":
            return "pretrain:" + os.path.basename(self.pretrained_dir(t["variant"], t["validation"], t["seed"]))
        if kind == "start":
            if t.get("regime"):
                return "start:%s-s%d-p%d" % (t["variant"], t["seed"], self.z["pretrain_steps"][t["variant"]])
            return "start:%s-s%d" % (t["variant"], t["seed"])
        if kind == "run":
            if t["validation"]:
                return "tune:%s-lr%s-s%d" % (t["arm"], fmt_lr(t["lr"]), t["seed"])
            return "run:%s-%s-s%d" % (t["variant"], t["arm"], t["seed"])
        if kind == "calib":
            return "calib:%s-p%d-s%d" % (t["arm"], t["phase"], t["seed"])
        return kind

    def result_path(self, kind, t):
        if kind == "pretrain":
            return os.path.join(self.pretrained_dir(t["variant"], t["validation"], t["seed"]), "pretrain.json")
        if kind == "start":
            if t.get("regime"):
                return os.path.join(self.results, "regime", "%s-start-s%d-p%d.json" % (
                    t["variant"], t["seed"], self.z["pretrain_steps"][t["variant"]]))
            return os.path.join(self.results, "runs", "%s-start-s%d.json" % (t["variant"], t["seed"]))
        if kind == "run":
            if t["validation"]:
                return os.path.join(self.results, "tuning", "%s-lr%s-s%d.json" % (t["arm"], fmt_lr(t["lr"]), t["seed"]))
            return os.path.join(self.results, "runs", "%s-%s-s%d.json" % (t["variant"], t["arm"], t["seed"]))
        if kind == "calib":
            return os.path.join(self.results, "tuning", "calib-%s-p%d-s%d.json" % (t["arm"], t["phase"], t["seed"]))
        if kind == "choose_uniform":
            return os.path.join(self.results, "tuning", "uniform-rate.json")
        return os.path.join(self.results, "tuning.json")

    def run_dir(self, kind, t):
        return os.path.join(self.work, "runs", self.key(kind, t).split(":", 1)[1])

    def deps(self, kind, t, all_tasks):
        """Keys this task waits for."""
        if kind in ("start",):
            return ["pretrain:" + os.path.basename(self.pretrained_dir(t["variant"], False, t["seed"]))]
        if kind == "run":
            d = ["pretrain:" + os.path.basename(self.pretrained_dir(t["variant"], t["validation"], t["seed"]))]
            if not t["validation"]:
                d.append("choose_lr")
            return d
        if kind == "choose_uniform":
            return [self.key(k, x) for k, x in all_tasks if k == "run" and x["validation"]]
        if kind == "calib":
            d = ["pretrain:" + os.path.basename(self.pretrained_dir("v0", True, t["seed"])), "choose_uniform"]
            if t["phase"] == 2:  # the matched rate comes from every tuning seed's phase-1 runs
                d += [self.key("calib", dict(t, phase=1, arm=a, seed=s)) for a in ("uniform", t["arm"])
                      for s in self.z["tuning_seeds"]]
            return d
        if kind == "choose_lr":
            return [self.key(k, x) for k, x in all_tasks if k == "calib"]
        return []

    # ---- families, learning rates -------------------------------------------------------

    def family_command(self, variant, validation):
        """(temporary directory, make_family.py command) of a family; the caller renames the
        directory to family_dir once the command succeeded."""
        tmp = self.family_dir(variant, validation) + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [sys.executable, os.path.join(HERE, "make_family.py"), tmp, "--variant", variant, "--seed", "0"]
        if validation:
            cmd += ["--validation-fraction", "0.1"]
        return tmp, cmd

    def ensure_family(self, variant, validation):
        d = self.family_dir(variant, validation)
        if os.path.exists(os.path.join(d, "family.json")):
            return d
        tmp, cmd = self.family_command(variant, validation)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        shutil.rmtree(d, ignore_errors=True)
        os.rename(tmp, d)
        return d

    def chosen_lr(self, arm):
        with open(self.result_path("choose_lr", {})) as f:
            return json.load(f)["lr"][arm]

    def load(self, kind, t):
        with open(self.result_path(kind, t)) as f:
            return json.load(f)

    def choose_uniform(self):
        """Amendment 4 (the pre-registered rule, for uniform alone): the rate with the highest
        mean final validation pass@1 over the tuning seeds; ties (within 0.005) go to the smaller."""
        means = []
        for lr in self.z["uniform_lrs"]:
            scores = [pass_at_1(self.load("run", dict(variant="v0", validation=True, seed=seed, arm="uniform",
                                                      lr=lr))["evals"][-1]["problems"])
                      for seed in self.z["tuning_seeds"]]
            means.append((lr, sum(scores) / len(scores), scores))
        best = max(m for _, m, _ in means)
        pick = min(lr for lr, m, _ in means if m >= best - 0.005)
        out = dict(rule="highest mean final validation pass@1 over the tuning seeds; within 0.005 the smaller rate",
                   tuning_seeds=self.z["tuning_seeds"], lr=pick,
                   sweep=[dict(lr=lr, mean=m, per_seed=sc) for lr, m, sc in means])
        write_json(self.result_path("choose_uniform", {}), out)
        self.log("uniform's learning rate: %s" % fmt_lr(pick))

    def calib_kl(self, arm, phase):
        """Mean per-step update KL of an arm's calibration runs, averaged over the tuning seeds."""
        per_seed = []
        for seed in self.z["tuning_seeds"]:
            kl = [v for v in self.load("calib", dict(arm=arm, phase=phase, seed=seed))["train"]["update/kl"]
                  if v is not None]
            if not kl:
                raise ValueError("calib:%s-p%d-s%d logged no update/kl" % (arm, phase, seed))
            per_seed.append(sum(kl) / len(kl))
        return sum(per_seed) / len(per_seed), per_seed

    def calib_lr(self, t):
        """The rate of a calibration run: uniform's rate in phase 1; in phase 2 the rate that
        matches uniform's per-step KL if KL grows as lr^2 (small steps): lr_u sqrt(KL_u / KL_arm)."""
        lr_u = self.load("choose_uniform", {})["lr"]
        if t["phase"] == 1:
            return lr_u
        kl_u, _ = self.calib_kl("uniform", 1)
        kl_1, _ = self.calib_kl(t["arm"], 1)
        return matched_lr(lr_u, kl_u, kl_1)

    def choose_lr(self):
        """Amendment 4: uniform's rate from the sweep; every other arm's from KL matching. The
        phase-2 rate is kept when its measured KL is within KL_TOLERANCE of uniform's; otherwise
        one secant step in log-log space through the two measured points."""
        lr_u = self.load("choose_uniform", {})["lr"]
        kl_u, kl_u_seeds = self.calib_kl("uniform", 1)
        table = {"uniform": dict(pick=lr_u, kl=kl_u, kl_per_seed=kl_u_seeds, how="sweep")}
        for arm in PRIMARY_ARMS + SECONDARY_ARMS:
            if arm == "uniform":
                continue
            kl_1, s1 = self.calib_kl(arm, 1)
            kl_2, s2 = self.calib_kl(arm, 2)
            lr_m = matched_lr(lr_u, kl_u, kl_1)
            pick, how = secant_lr(lr_u, kl_1, lr_m, kl_2, kl_u)
            table[arm] = dict(pick=pick, how=how, phase1=dict(lr=lr_u, kl=kl_1, kl_per_seed=s1),
                              phase2=dict(lr=lr_m, kl=kl_2, kl_per_seed=s2,
                                          kl_over_uniform=kl_2 / kl_u if kl_u > 0 else None))
        out = dict(rule="uniform: the sweep's rate (highest mean final validation pass@1 over the tuning seeds); "
                        "other arms: per-step update KL matched to uniform's on %d-step constant-rate runs "
                        "(PREREGISTRATION.md, amendment 4)" % self.z["calib_steps"],
                   tuning_seeds=self.z["tuning_seeds"], lr={a: table[a]["pick"] for a in table},
                   uniform_sweep=self.load("choose_uniform", {})["sweep"], arms=table)
        write_json(self.result_path("choose_lr", {}), out)
        self.log("learning rates chosen: " + ", ".join("%s %s" % (a, fmt_lr(out["lr"][a])) for a in out["lr"]))

    # ---- commands -----------------------------------------------------------------------

    def common_sets(self, t, run_dir):
        """The egca-train overrides every run, start and calibration shares (the fixed settings)."""
        z = self.z
        validation = t.get("validation", False)
        fam = self.ensure_family(t["variant"], validation)
        max_new = z["max_new"][t["variant"]]
        return ["model=" + self.pretrained_dir(t["variant"], validation, t["seed"]),
                "data.train=" + os.path.join(fam, "train.jsonl"),
                "data.eval=" + os.path.join(fam, "validation.jsonl" if validation else "heldout.jsonl"),
                "data.eval_limit=%d" % z["eval_limit"], "run.seed=%d" % t["seed"],
                "rollout.prompts_per_step=%d" % z["prompts"], "rollout.group_size=%d" % z["group"],
                "optim.micro_batch=%d" % (z["prompts"] * z["group"]),
                "rollout.max_new_tokens=%d" % max_new, "eval.max_new_tokens=%d" % max_new,
                "eval.final_samples=%d" % z["final_samples"], "run.save_every=%d" % z["save_every"],
                "run.keep_checkpoints=1", "loss.normalization=sequence", "run_dir=" + run_dir]

    def resume_or_start(self, run_dir, sets):
        """egca-train --resume when the run has a checkpoint, else a fresh run with `sets`."""
        ckpts = os.path.join(run_dir, "checkpoints")
        if os.path.isdir(ckpts) and any(os.path.exists(os.path.join(ckpts, c, "trainer_state.json"))
                                        for c in os.listdir(ckpts)):
            return [self.train_bin, "--resume", run_dir, "--quiet"]
        argv = [self.train_bin, "--config", self.config, "--overwrite", "--quiet"]
        for s in sets:
            argv += ["--set", s]
        return argv

    def command(self, kind, t):
        z = self.z
        if kind == "pretrain":
            fam = self.ensure_family(t["variant"], t["validation"])
            out = self.pretrained_dir(t["variant"], t["validation"], t["seed"])
            shutil.rmtree(out + ".tmp", ignore_errors=True)
            return [self.pretrain_bin, "--config", self.config, "--corpus", os.path.join(fam, "corpus.jsonl"),
                    "--tokenizer", os.path.join(fam, "tokenizer.json"), "--out", out + ".tmp"] + \
                self.pretrain_args(t["variant"], t["seed"])
        validation = t.get("validation", False)
        run_dir = self.run_dir(kind, t)
        common = self.common_sets(t, run_dir)
        if kind == "calib":  # a short constant-rate run, no evaluation: its per-step update KL
            lr = self.calib_lr(t)
            t["lr"] = lr
            sets = [x for x in common if not x.startswith("data.eval=")] + ARMS[t["arm"]] + [
                "data.eval=", "optim.lr=%g" % lr, "optim.steps=%d" % z["calib_steps"], "optim.lr_decay=false",
                "run.eval_every=0", "run.dump_rollouts=false"]
        elif kind == "start":
            sets = common + ["optim.lr=0", "optim.steps=1", "run.eval_every=1", "run.dump_rollouts=false"]
            if t.get("regime"):  # a check of the regime, not a study start: 4 samples per problem
                sets.append("eval.final_samples=%d" % z["regime_samples"])
        else:
            lr = t["lr"] if validation else self.chosen_lr(t["arm"])
            t["lr"] = lr
            eval_every = z["steps"] if validation else z["eval_every"]
            # Reported runs dump their rollouts (finish() scores localization from them).
            sets = common + ARMS[t["arm"]] + ["optim.lr=%g" % lr, "optim.steps=%d" % z["steps"],
                                              "run.eval_every=%d" % eval_every, "eval.samples=%d" % z["mid_samples"],
                                              "run.dump_rollouts=%s" % ("false" if validation else "true")]
        return self.resume_or_start(run_dir, sets)

    def finish(self, kind, t, wall):
        """Turns a finished process into its result file."""
        if kind == "pretrain":
            out = self.pretrained_dir(t["variant"], t["validation"], t["seed"])
            shutil.rmtree(out, ignore_errors=True)
            os.rename(out + ".tmp", out)
            return
        run_dir = self.run_dir(kind, t)
        evals = []
        eval_dir = os.path.join(run_dir, "eval")
        for name in sorted(os.listdir(eval_dir)) if os.path.isdir(eval_dir) else []:
            with open(os.path.join(eval_dir, name)) as f:
                e = json.load(f)
            step = 0 if kind == "start" else e["step"]
            evals.append(dict(step=step, problems={row["problem_id"]: [row.get("c", 0), row.get("n", 0)]
                                                   for row in e["problems"]}))
        evals.sort(key=lambda e: e["step"])
        if not evals and kind != "calib":
            raise RuntimeError("%s: no evaluation written" % run_dir)
        train = {k: [] for k in TRAIN_KEYS}
        steps = []
        metrics = os.path.join(run_dir, "metrics.jsonl")
        if os.path.exists(metrics):
            with open(metrics) as f:
                for line in f:
                    m = json.loads(line)
                    if m.get("kind") != "train":
                        continue
                    steps.append(m["step"])
                    for k in TRAIN_KEYS:
                        train[k].append(m.get(k))
        with open(os.path.join(run_dir, "config.yaml")) as f:
            config_text = f.read()
        loc = None
        if kind == "run" and not t.get("validation"):
            loc = localization(run_dir, os.path.join(self.family_dir(t["variant"], False), "near_misses.jsonl"))
        r = dict(variant=t["variant"] + ("-validation" if t.get("validation") else ""),
                 arm="start" if kind == "start" else t["arm"], seed=t["seed"], lr=t.get("lr"),
                 phase=t.get("phase"),
                 evals=evals, train=dict(steps=steps, **train), wall_seconds=round(wall, 1),
                 **({"localization": loc} if loc is not None else {}),
                 config_sha256=hashlib.sha256(config_text.encode()).hexdigest()[:16],
                 command=self.command_name + (" --quick" if self.args.quick else ""))
        write_json(self.result_path(kind, t), r)

    # ---- the loop -----------------------------------------------------------------------

    def log(self, msg):
        print("[study %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)

    def run(self):
        all_tasks = self.tasks()
        keys = {self.key(k, t): (k, t) for k, t in all_tasks}
        done = {key for key, (k, t) in keys.items() if os.path.exists(self.result_path(k, t))}
        total = len(all_tasks)
        self.log("%d tasks, %d done before this session; work %s, results %s" % (total, len(done), self.work,
                                                                                 self.results))
        if self.args.dry_run:
            for k, t in all_tasks:
                key = self.key(k, t)
                print("%-6s %s" % ("done" if key in done else "todo", key))
            return 0
        if len(done) == total:
            self.log("nothing to do: every run has its result")
            return 0
        running = {}  # key -> (Popen, kind, task, started, log file)
        pending = [key for key, _ in ((self.key(k, t), 0) for k, t in all_tasks) if key not in done]
        failed = set()
        last_progress = 0.0

        def stop(signum, _frame):
            self.log("signal %d: stopping %d runs (they resume from their last checkpoint)" % (signum, len(running)))
            for p, *_ in running.values():
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            for p, *_ in running.values():
                p.wait()
            sys.exit(130)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while pending or running:
            # Launch what is ready, in the pre-registered order.
            for key in list(pending):
                if len(running) >= self.args.jobs:
                    break
                kind, t = keys[key]
                deps = self.deps(kind, t, all_tasks)
                if any(d in failed for d in deps):
                    pending.remove(key)
                    failed.add(key)
                    continue
                if not all(d in done for d in deps):
                    continue
                pending.remove(key)
                if kind.startswith("choose"):  # a decision from finished runs' results, no process
                    try:
                        getattr(self, kind)()
                        done.add(key)
                    except (OSError, ValueError, KeyError, ZeroDivisionError) as e:
                        failed.add(key)
                        self.log("FAILED choosing the learning rates (is the tuning block done?): %s" % e)
                    continue
                try:
                    argv = self.command(kind, t)
                except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
                    failed.add(key)
                    self.log("FAILED %s before it started: %s" % (key, e))
                    continue
                if argv is None:  # the plan's rule says this task is not needed; command() wrote its result
                    done.add(key)
                    self.log("not needed: %s" % key)
                    continue
                os.makedirs(os.path.join(self.work, "logs"), exist_ok=True)
                log_path = os.path.join(self.work, "logs", key.replace(":", "-") + ".log")
                logf = open(log_path, "a")
                logf.write("\n== %s %s\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), " ".join(argv)))
                logf.flush()
                p = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, cwd=ROOT,
                                     start_new_session=True, pass_fds=(self.lock_fd,))
                running[key] = (p, kind, t, time.time(), logf, "--resume" in argv)
                self.log("start %s%s" % (key, " (resume)" if "--resume" in argv else ""))
            if not running:
                if pending:  # waiting on something that cannot finish
                    self.log("blocked: %s" % ", ".join(pending[:5]))
                    break
                continue
            time.sleep(1.0)
            for key in list(running):
                p, kind, t, t0, logf, resumed = running[key]
                if p.poll() is None:
                    continue
                logf.close()
                del running[key]
                wall = time.time() - t0
                if p.returncode == 0:
                    try:
                        self.finish(kind, t, wall)
                        done.add(key)
                        if kind in ("run",) and not resumed:  # whole 100-step runs only: the ETA's unit
                            self.finished_times.append(wall)
                        self.log("done %s (%.0f s)" % (key, wall))
                    except (OSError, RuntimeError, ValueError, KeyError) as e:
                        failed.add(key)
                        self.log("FAILED %s: %s" % (key, e))
                else:
                    failed.add(key)
                    self.log("FAILED %s: exit %d, see %s" % (key, p.returncode,
                                                              os.path.join(self.work, "logs", key.replace(":", "-") + ".log")))
            if time.time() - last_progress > 60 or not running:
                last_progress = time.time()
                self.progress(total, len(done), running, pending)
        self.progress(total, len(done), running, pending)
        if failed:
            self.log("%d tasks failed or were skipped (rerun to retry): %s" % (len(failed), ", ".join(sorted(failed))))
            return 1
        self.log("all %d tasks done" % total)
        return 0

    def progress(self, total, n_done, running, pending):
        runs_left = sum(1 for k in pending if k.startswith(("run:", "tune:", "start:"))) + len(running)
        line = "%d/%d tasks done" % (n_done, total)
        if self.finished_times:
            mean = sum(self.finished_times) / len(self.finished_times)
            eta = mean * runs_left / max(1, self.args.jobs)
            line += ", %.0f s per run (%d finished this session), ETA %.1f h for %d runs at %d at once" % (
                mean, len(self.finished_times), eta / 3600, runs_left, self.args.jobs)
        if running:
            parts = []
            for key, (p, kind, t, t0, *_) in running.items():
                step = ""
                m = os.path.join(self.run_dir(kind, t), "metrics.jsonl") if kind != "pretrain" else ""
                if m and os.path.exists(m):
                    with open(m) as f:
                        n = sum(1 for line in f if '"kind":"train"' in line.replace(" ", ""))
                    step = " step %d" % n
                parts.append("%s%s" % (key, step))
            line += "; running: " + ", ".join(parts)
        self.log(line)


def localization(run_dir, near_misses_path):
    """Localization accuracy over one run's dumped rollouts, scored as docs/results/learns
    scores it (report.localization): LOGIC samples that are exactly a catalogued near-miss,
    and how often each span covers the bug line. Programs with more than one change, or v1's
    surface variation, match no entry and are not scored. None when the run dumped nothing."""
    if not os.path.isdir(os.path.join(run_dir, "rollouts")):
        return None
    loc = report.localization([run_dir], report.read_jsonl(near_misses_path))
    return dict(loc, by_kind=dict(loc["by_kind"]))


def matched_lr(lr_ref, kl_target, kl_at_ref):
    """The rate whose per-step KL equals kl_target when KL grows as lr^2 and measured kl_at_ref at lr_ref;
    lr_ref itself when either KL is not positive (no step moved the policy: nothing to match)."""
    if not (kl_target > 0 and kl_at_ref > 0):
        return lr_ref
    return lr_ref * math.sqrt(kl_target / kl_at_ref)


def secant_lr(lr_1, kl_1, lr_2, kl_2, kl_target):
    """(rate, how): lr_2 when its KL is within KL_TOLERANCE of the target; otherwise the log-log
    secant through (lr_1, kl_1) and (lr_2, kl_2) solved for the target, kept within 4x of lr_2
    (the lr^2 law's answer from lr_2 when the two points give no usable slope)."""
    if not (kl_target > 0 and kl_2 > 0 and kl_1 > 0):
        return lr_2, "no KL measured (every step's groups had equal rewards): phase 2's rate"
    ratio = kl_2 / kl_target
    if 1.0 / KL_TOLERANCE <= ratio <= KL_TOLERANCE:
        return lr_2, "matched (KL within %.2fx)" % KL_TOLERANCE
    slope = math.log(kl_2 / kl_1) / math.log(lr_2 / lr_1) if lr_2 != lr_1 and kl_1 > 0 else 0.0
    if not slope > 0.1:
        return matched_lr(lr_2, kl_target, kl_2), "lr^2 law from phase 2 (no usable slope)"
    lr = lr_2 * (kl_target / kl_2) ** (1.0 / slope)
    return min(max(lr, lr_2 / 4), lr_2 * 4), "secant (slope %.2f)" % slope


def pass_at_1(problems):
    vals = [c / n for c, n in problems.values() if n > 0]
    return sum(vals) / len(vals) if vals else 0.0


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes for the slow-labelled test")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (each uses one thread)")
    ap.add_argument("--work", help="run directories, checkpoints, pre-trained models, logs "
                                   "(default runs/credit-study, or runs/credit-study-quick)")
    ap.add_argument("--results", help="result JSON files (default docs/results/credit-study; --quick: WORK/results)")
    ap.add_argument("--blocks", default="tuning,primary,secondary,v2",
                    help="which blocks, comma-separated: regime (pre-training + start evaluation of v0, v1, "
                         "v2 on the tuning seeds: the near-correct regime check), starts (every (variant, seed)'s "
                         "shared start: pre-training + step-0 evaluation), tuning, primary, secondary, v2")
    ap.add_argument("--variants", help="only these variants' tasks, comma-separated (default: all)")
    ap.add_argument("--pretrain-steps", type=int, default=0,
                    help="pre-training steps (default: the pre-registered number); for the regime check")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and what is done, run nothing")
    args = ap.parse_args()
    if args.jobs < 1:
        print("study.py: --jobs must be >= 1", file=sys.stderr)
        return 2
    blocks = ("regime", "starts", "tuning", "primary", "secondary", "v2")
    bad = [b for b in args.blocks.split(",") if b not in blocks]
    if bad:
        print("study.py: --blocks: unknown block '%s' (%s)" % (bad[0], ", ".join(blocks)), file=sys.stderr)
        return 2
    bad = [v for v in (args.variants or "v0").split(",") if v not in ("v0", "v1", "v2")]
    if bad:
        print("study.py: --variants: unknown variant '%s' (v0, v1, v2)" % bad[0], file=sys.stderr)
        return 2
    return lock_and_run(Study(args), "study.py")


def lock_and_run(st, prog):
    """Checks the binaries, takes the work directory's lock (a second driver is refused while
    the first or any run it started lives) and runs the plan; --dry-run reads only."""
    for b in (st.train_bin, st.pretrain_bin):
        if not os.access(b, os.X_OK) and not st.args.dry_run:
            print("%s: %s is not built (ninja -C build egca-train learns_pretrain, or set EGCA_BUILD_DIR)" % (prog, b),
                  file=sys.stderr)
            return 2
    if st.args.dry_run:  # reads only: no lock needed
        return st.run()
    os.makedirs(st.work, exist_ok=True)
    st.lock_fd = os.open(os.path.join(st.work, "study.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(st.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("%s: %s is locked: another study driver, or a run it started, is still running "
              "(wait for it or stop it, then rerun)" % (prog, os.path.join(st.work, "study.lock")), file=sys.stderr)
        return 2
    return st.run()


if __name__ == "__main__":
    sys.exit(main())
