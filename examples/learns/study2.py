#!/usr/bin/python3
"""The confirmatory credit study (issue 37), docs/results/credit-study-2/PREREGISTRATION.md,
as one resumable command (the first study's driver, study.py, with this study's plan).

    examples/learns/study2.py [--quick] [--jobs 2] [--work DIR] [--results DIR] [--dry-run]
                              [--blocks tuning,primary,secondary] [--variants v0,v1,v2]

Plan, in the pre-registered order (PREREGISTRATION.md, "Learning rates" and "The pilot"):
  tuning     on v1 with a validation split, tuning seeds 101 and 102:
             uniform's rate re-checked by a sweep (the pass@1 rule); then, for `earliest` and
             the eight pilot candidates, phase 1: a short constant-rate run at uniform's rate
             (its per-step update KL), phase 2: a whole 100-step run at the rate the lr^2 law
             gives for uniform's short-run KL, phase 3 only where phase 2's whole-run KL is
             not within 1.25x of uniform's whole-run KL: a whole run at the lr^2 law's rate
             from phase 2. The pilot rule then picks `signed` among the candidates.
  primary    per seed 1..10 and variant v1, v0, v2: the shared start (pre-training and the
             step-0 evaluation), then uniform, earliest, signed.
  secondary  the rates of the 2 x 2 cells and the binary-reward arms by the same phases,
             then v1 seeds 1..5 of each.

Every run is a new run: the first study kept no weights, so its runs cannot be reused (the
pre-registration's reuse rule). Resumable exactly as study.py: kill it and rerun the same
command. --quick: tiny sizes for the slow-labelled test (two pilot candidates, not eight).

Exit status: 0 all done, 1 a run failed (rerun to retry), 2 bad usage or another driver running.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study as base  # noqa: E402

TUNE_VARIANT = "v1"
PRIMARY_ARMS = ["uniform", "earliest", "signed"]
PRIMARY_VARIANTS = ["v1", "v0", "v2"]  # interleaved by seed in this order
SECONDARY_VARIANT = "v1"
# The 2 x 2 of credit.syntax x credit.positive_logic at target earliest, renormalized; the
# (span, span) cell is `earliest` itself, the (uniform, span) cell a pilot candidate.
TWO_BY_TWO = ["pl-uniform.sx-span.rn-true", "pl-span.sx-uniform.rn-true", "pl-uniform.sx-uniform.rn-true"]
BINARY_ARMS = ["binary-uniform", "binary-signed"]
SECONDARY_ARMS = TWO_BY_TWO + BINARY_ARMS
KL_TOLERANCE = base.KL_TOLERANCE  # 1.25


def candidate(pl, sx, rn):
    return "pl-%s.sx-%s.rn-%s" % (pl, sx, "true" if rn else "false")


def pilot_candidates(quick):
    if quick:
        return [candidate("uniform", "span", True), candidate("zero", "cause", False)]
    return [candidate(pl, sx, rn) for pl in ("uniform", "zero") for sx in ("span", "cause") for rn in (True, False)]


def parse_candidate(name):
    """'pl-uniform.sx-cause.rn-false' -> ('uniform', 'cause', False); ValueError otherwise."""
    parts = name.split(".")
    if len(parts) != 3 or not parts[0].startswith("pl-") or not parts[1].startswith("sx-") or \
            parts[2] not in ("rn-true", "rn-false"):
        raise ValueError("not a candidate name: %r" % name)
    pl, sx = parts[0][3:], parts[1][3:]
    if pl not in ("span", "uniform", "prefix", "zero") or sx not in ("span", "uniform", "cause"):
        raise ValueError("not a candidate name: %r" % name)
    return pl, sx, parts[2] == "rn-true"


def config_sets(name, signed=None):
    """egca-train overrides of a configuration. `signed` is the pilot's pick (a candidate
    name), needed for 'signed' and 'binary-signed'."""
    if name == "uniform":
        return ["credit.target=uniform"]
    if name == "earliest":
        return config_sets(candidate("span", "span", True))
    if name == "signed":
        if signed is None:
            raise ValueError("'signed' before the pilot chose it")
        return config_sets(signed)
    if name == "binary-uniform":
        return ["reward.kind=binary"] + config_sets("uniform")
    if name == "binary-signed":
        return ["reward.kind=binary"] + config_sets("signed", signed)
    pl, sx, rn = parse_candidate(name)
    return ["credit.target=earliest", "credit.positive_logic=" + pl, "credit.syntax=" + sx,
            "credit.renormalize=" + ("true" if rn else "false")]


def pilot_pick(scores):
    """The pre-registered pilot rule. scores: candidate -> mean final validation pass@1 over
    the tuning seeds (a fraction). The best candidate, except that one within 0.005 (0.5
    points) of the best is preferred when it is simpler: renormalize true before false, then
    syntax span before cause, then positive_logic uniform before zero; among equally simple
    ones the higher score, then the name."""
    best = max(scores.values())
    near = [c for c, s in scores.items() if s >= best - 0.005 - 1e-12]

    def simplicity(c):
        pl, sx, rn = parse_candidate(c)
        return (0 if rn else 1, 0 if sx == "span" else 1, 0 if pl == "uniform" else 1)
    return min(near, key=lambda c: (simplicity(c), -scores[c], c))


def phase3_needed(kl_whole_config, kl_whole_uniform):
    """Phase 2's rate stands when its whole-run KL is within KL_TOLERANCE of uniform's."""
    if not (kl_whole_config > 0 and kl_whole_uniform > 0):
        return False  # nothing moved: nothing to match (reported as such)
    r = kl_whole_config / kl_whole_uniform
    return not (1.0 / KL_TOLERANCE <= r <= KL_TOLERANCE)


def phase3_lr(lr_2, kl_2, kl_target):
    """The lr^2 law's rate from phase 2's whole run, kept within 4x of phase 2's rate."""
    lr = base.matched_lr(lr_2, kl_target, kl_2)
    return min(max(lr, lr_2 / 4), lr_2 * 4)


def mean_kl(result):
    kl = [v for v in result["train"]["update/kl"] if v is not None]
    if not kl:
        raise ValueError("%s-%s seed %s logged no update/kl" % (result["variant"], result["arm"], result["seed"]))
    return sum(kl) / len(kl)


def sizes(quick):
    z = base.sizes(quick)
    z.update(primary_seeds=z["primary_seeds"], secondary_seeds=z["secondary_seeds"],
             uniform_lrs=[1e-4, 3e-4, 1e-3] if not quick else [3e-4, 1e-3],
             calib_steps=20 if not quick else 2)
    return z


class Study2(base.Study):
    def __init__(self, args):
        super().__init__(args)
        self.z = sizes(args.quick)
        self.candidates = pilot_candidates(args.quick)
        self.work = os.path.abspath(args.work or ("runs/credit-study-2-quick" if args.quick else "runs/credit-study-2"))
        default_results = os.path.join(self.work, "results") if args.quick else os.path.join(
            base.ROOT, "docs/results/credit-study-2")
        self.results = os.path.abspath(args.results or default_results)
        self.command_name = "examples/learns/study2.py"
        self.commit = git_commit()

    def finish(self, kind, t, wall):
        super().finish(kind, t, wall)
        if kind != "pretrain":  # every result names the egca commit of the checkout that ran it
            path = self.result_path(kind, t)
            with open(path) as f:
                r = json.load(f)
            r["egca_commit"] = self.commit
            if kind in ("start", "run"):  # the start it trained from: the arms of a seed must share it
                model = os.path.join(self.pretrained_dir(t["variant"], t.get("validation", False), t["seed"]),
                                     "model.safetensors")
                if os.path.exists(model):
                    with open(model, "rb") as f:
                        r["start_model_sha256"] = hashlib.sha256(f.read()).hexdigest()
            base.write_json(path, r)

    def run(self):
        if not self.args.dry_run:
            self.prepare_families()
        return super().run()

    def prepare_families(self):
        """Every family the plan needs, generated at once before the first task (v2's takes
        minutes; generated inside the loop it would hold up every other task meanwhile)."""
        need = sorted({(t["variant"], bool(t.get("validation"))) for k, t in self.tasks() if "variant" in t})
        todo = [(v, val) for v, val in need if not os.path.exists(os.path.join(self.family_dir(v, val), "family.json"))]
        if not todo:
            return
        self.log("generating families: %s" % ", ".join(v + ("-val" if val else "") for v, val in todo))
        procs = []
        for v, val in todo:
            tmp, cmd = self.family_command(v, val)
            procs.append((v, val, tmp, subprocess.Popen(cmd, stdout=subprocess.DEVNULL)))
        for v, val, tmp, p in procs:
            if p.wait() != 0:
                raise SystemExit("study2.py: make_family.py %s failed (exit %d)" % (v, p.returncode))
            shutil.rmtree(self.family_dir(v, val), ignore_errors=True)
            os.rename(tmp, self.family_dir(v, val))

    # ---- the plan -----------------------------------------------------------------------

    def tune_configs(self, block):
        if block == "primary":
            return ["earliest"] + self.candidates
        extra = [c for c in SECONDARY_ARMS if c not in self.candidates and c != "earliest"]
        return extra

    def tasks(self):
        z = self.z
        out = []
        seeds_t = z["tuning_seeds"]
        if "tuning" in self.blocks or "primary" in self.blocks or "secondary" in self.blocks:
            for seed in seeds_t:
                out.append(("pretrain", dict(variant=TUNE_VARIANT, validation=True, seed=seed)))
            for seed in seeds_t:
                for lr in z["uniform_lrs"]:
                    out.append(("run", dict(variant=TUNE_VARIANT, validation=True, seed=seed, arm="uniform", lr=lr)))
            out.append(("choose_uniform", {}))
            for block in ("primary", "secondary"):
                if block == "secondary" and "secondary" not in self.blocks:
                    break
                configs = (["uniform"] if block == "primary" else []) + self.tune_configs(block)
                for seed in seeds_t:
                    for c in configs:
                        out.append(("calib", dict(variant=TUNE_VARIANT, validation=True, seed=seed, arm=c, phase=1,
                                                  block=block)))
                for phase in (2, 3):
                    for seed in seeds_t:
                        for c in configs:
                            if c != "uniform":
                                out.append(("run", dict(variant=TUNE_VARIANT, validation=True, seed=seed, arm=c,
                                                        phase=phase, block=block)))
                if block == "primary":
                    out.append(("choose_signed", {}))
                    out.append(("choose_lr", {}))
                else:
                    out.append(("choose_lr_secondary", {}))
                if block == "primary" and "primary" in self.blocks:
                    for seed in z["primary_seeds"]:
                        for variant in PRIMARY_VARIANTS:
                            out.append(("pretrain", dict(variant=variant, validation=False, seed=seed)))
                            out.append(("start", dict(variant=variant, seed=seed)))
                            for arm in PRIMARY_ARMS:
                                out.append(("run", dict(variant=variant, validation=False, seed=seed, arm=arm)))
            if "secondary" in self.blocks:
                for seed in z["secondary_seeds"]:
                    out.append(("pretrain", dict(variant=SECONDARY_VARIANT, validation=False, seed=seed)))
                    out.append(("start", dict(variant=SECONDARY_VARIANT, seed=seed)))
                    for arm in SECONDARY_ARMS:
                        out.append(("run", dict(variant=SECONDARY_VARIANT, validation=False, seed=seed, arm=arm,
                                                block="secondary")))
        if self.variants is not None:
            out = [(k, t) for k, t in out if k.startswith("choose") or t.get("validation")
                   or t.get("variant") in self.variants]
        seen, unique = set(), []
        for kind, t in out:
            key = self.key(kind, t)
            if key not in seen:
                seen.add(key)
                unique.append((kind, t))
        return unique

    def key(self, kind, t):
        if kind == "run" and t.get("validation") and t.get("phase"):
            return "tune:%s-p%d-s%d" % (t["arm"], t["phase"], t["seed"])
        return super().key(kind, t)

    def result_path(self, kind, t):
        if kind == "run" and t.get("validation") and t.get("phase"):
            return os.path.join(self.results, "tuning", "%s-p%d-s%d.json" % (t["arm"], t["phase"], t["seed"]))
        if kind == "choose_signed":
            return os.path.join(self.results, "pilot.json")
        if kind == "choose_lr_secondary":
            return os.path.join(self.results, "tuning-secondary.json")
        return super().result_path(kind, t)

    def deps(self, kind, t, all_tasks):
        seeds_t = self.z["tuning_seeds"]
        pre_t = lambda s: "pretrain:" + os.path.basename(self.pretrained_dir(TUNE_VARIANT, True, s))  # noqa: E731
        if kind == "calib":
            d = [pre_t(t["seed"]), "choose_uniform"]
            if t["block"] == "secondary":
                d.append("choose_lr")  # the primary block's rates first; binary-signed needs the pilot
            return d
        if kind == "run" and t.get("validation") and t.get("phase"):
            d = [pre_t(t["seed"]), "choose_uniform"]
            if t["phase"] == 2:  # the lr^2 law from every tuning seed's phase-1 KL, the arm's and uniform's
                d += [self.key("calib", dict(arm=a, phase=1, seed=s)) for a in ("uniform", t["arm"]) for s in seeds_t]
            else:
                d += [self.key("run", dict(t, phase=2, seed=s)) for s in seeds_t]
            return d
        if kind == "run" and not t.get("validation"):
            return ["pretrain:" + os.path.basename(self.pretrained_dir(t["variant"], False, t["seed"])),
                    "choose_lr_secondary" if t.get("block") == "secondary" else "choose_lr"]
        if kind == "choose_uniform":  # the sweep's runs (validation runs without a phase)
            return [self.key(k, x) for k, x in all_tasks if k == "run" and x.get("validation") and not x.get("phase")]
        if kind in ("choose_signed", "choose_lr", "choose_lr_secondary"):
            configs = self.candidates if kind == "choose_signed" else (
                ["earliest"] + self.candidates if kind == "choose_lr" else self.tune_configs("secondary"))
            d = [self.key("run", dict(validation=True, arm=c, phase=p, seed=s))
                 for c in configs for p in (2, 3) for s in seeds_t]
            if kind == "choose_lr":
                d.append("choose_signed")
            return d
        return super().deps(kind, t, all_tasks)

    # ---- rates --------------------------------------------------------------------------

    def signed_pick(self):
        with open(self.result_path("choose_signed", {})) as f:
            return json.load(f)["signed"]

    def sets_of(self, arm):
        signed = self.signed_pick() if arm in ("signed", "binary-signed") else None
        return config_sets(arm, signed)

    def uniform_whole_kl(self):
        """uniform's whole-run KL on the tuning seeds: its sweep runs at the chosen rate."""
        lr_u = self.load("choose_uniform", {})["lr"]
        per = [mean_kl(self.load("run", dict(variant=TUNE_VARIANT, validation=True, seed=s, arm="uniform", lr=lr_u)))
               for s in self.z["tuning_seeds"]]
        return sum(per) / len(per), per

    def phase_kl(self, arm, phase):
        per = []
        for s in self.z["tuning_seeds"]:
            if phase == 1:
                per.append(mean_kl(self.load("calib", dict(arm=arm, phase=1, seed=s))))
            else:
                per.append(mean_kl(self.load("run", dict(validation=True, arm=arm, phase=phase, seed=s))))
        return sum(per) / len(per), per

    def phase_lr(self, t):
        lr_u = self.load("choose_uniform", {})["lr"]
        if t["phase"] == 1:
            return lr_u
        if t["phase"] == 2:
            kl_u, _ = self.phase_kl("uniform", 1)
            kl_1, _ = self.phase_kl(t["arm"], 1)
            return base.matched_lr(lr_u, kl_u, kl_1)
        lr_2 = self.load("run", dict(validation=True, arm=t["arm"], phase=2, seed=t["seed"]))["lr"]
        kl_2, _ = self.phase_kl(t["arm"], 2)
        kl_u, _ = self.uniform_whole_kl()
        return phase3_lr(lr_2, kl_2, kl_u)

    def rate_row(self, arm):
        """The rate an arm runs at, the phase it comes from, its whole-run KL and pilot score."""
        kl_u, _ = self.uniform_whole_kl()
        p2 = [self.load("run", dict(validation=True, arm=arm, phase=2, seed=s)) for s in self.z["tuning_seeds"]]
        kl_2, kl_2s = self.phase_kl(arm, 2)
        row = dict(phase1=dict(lr=self.load("choose_uniform", {})["lr"], kl_short=self.phase_kl(arm, 1)[0]),
                   phase2=dict(lr=p2[0]["lr"], kl=kl_2, kl_per_seed=kl_2s, kl_over_uniform=kl_2 / kl_u if kl_u else None))
        final = p2
        if phase3_needed(kl_2, kl_u):
            p3 = [self.load("run", dict(validation=True, arm=arm, phase=3, seed=s)) for s in self.z["tuning_seeds"]]
            kl_3, kl_3s = self.phase_kl(arm, 3)
            row["phase3"] = dict(lr=p3[0]["lr"], kl=kl_3, kl_per_seed=kl_3s,
                                 kl_over_uniform=kl_3 / kl_u if kl_u else None)
            final, row["from"] = p3, "phase 3 (phase 2's KL outside %.2fx)" % KL_TOLERANCE
        else:
            row["from"] = "phase 2 (KL within %.2fx)" % KL_TOLERANCE if kl_2 > 0 and kl_u > 0 else \
                "phase 2 (no KL measured: nothing to match)"
        row["pick"] = final[0]["lr"]
        scores = [base.pass_at_1(r["evals"][-1]["problems"]) for r in final]
        row["validation_pass_at_1"] = sum(scores) / len(scores)
        row["validation_pass_at_1_per_seed"] = scores
        return row

    def choose_signed(self):
        rows = {c: self.rate_row(c) for c in self.candidates}
        pick = pilot_pick({c: r["validation_pass_at_1"] for c, r in rows.items()})
        out = dict(rule="highest mean final validation pass@1 over the tuning seeds, each candidate at its KL-matched "
                        "rate; within 0.5 points of the best the simpler is preferred: renormalize true before "
                        "false, syntax span before cause, positive_logic uniform before zero (PREREGISTRATION.md)",
                   tuning_seeds=self.z["tuning_seeds"], signed=pick, signed_sets=config_sets(pick), candidates=rows)
        base.write_json(self.result_path("choose_signed", {}), out)
        self.log("pilot: signed = %s" % pick)

    def choose_lr(self):
        lr_u = self.load("choose_uniform", {})["lr"]
        kl_u, kl_us = self.uniform_whole_kl()
        pilot = self.load("choose_signed", {})
        table = {"uniform": dict(pick=lr_u, kl=kl_u, kl_per_seed=kl_us, how="sweep (pass@1 rule)"),
                 "earliest": self.rate_row("earliest"),
                 "signed": dict(pilot["candidates"][pilot["signed"]], config=pilot["signed"])}
        out = dict(rule="uniform: the sweep's rate; the others: whole-run update KL matched to uniform's "
                        "(PREREGISTRATION.md, Learning rates)", tuning_seeds=self.z["tuning_seeds"],
                   lr={a: table[a]["pick"] for a in table}, uniform_sweep=self.load("choose_uniform", {})["sweep"],
                   arms=table)
        base.write_json(self.result_path("choose_lr", {}), out)
        self.log("learning rates chosen: " + ", ".join("%s %s" % (a, base.fmt_lr(out["lr"][a])) for a in out["lr"]))

    def choose_lr_secondary(self):
        primary = self.load("choose_lr", {})
        table = {arm: primary_pilot_row(self, arm) if arm in self.candidates else self.rate_row(arm)
                 for arm in SECONDARY_ARMS}
        out = dict(rule="whole-run update KL matched to uniform's (PREREGISTRATION.md, Learning rates)",
                   lr={a: table[a]["pick"] for a in table}, arms=table, uniform=primary["arms"]["uniform"])
        base.write_json(self.result_path("choose_lr_secondary", {}), out)
        self.log("secondary rates: " + ", ".join("%s %s" % (a, base.fmt_lr(out["lr"][a])) for a in out["lr"]))

    def chosen_lr(self, arm):
        if arm in PRIMARY_ARMS:
            return self.load("choose_lr", {})["lr"][arm]
        return self.load("choose_lr_secondary", {})["lr"][arm]

    def choose_uniform(self):
        """The pass@1 rule of study.py, on v1's validation split."""
        means = []
        for lr in self.z["uniform_lrs"]:
            scores = [base.pass_at_1(self.load("run", dict(variant=TUNE_VARIANT, validation=True, seed=seed,
                                                          arm="uniform", lr=lr))["evals"][-1]["problems"])
                      for seed in self.z["tuning_seeds"]]
            means.append((lr, sum(scores) / len(scores), scores))
        best = max(m for _, m, _ in means)
        pick = min(lr for lr, m, _ in means if m >= best - 0.005)
        out = dict(rule="highest mean final validation pass@1 over the tuning seeds; within 0.005 the smaller rate",
                   variant=TUNE_VARIANT, tuning_seeds=self.z["tuning_seeds"], lr=pick,
                   sweep=[dict(lr=lr, mean=m, per_seed=sc) for lr, m, sc in means])
        base.write_json(self.result_path("choose_uniform", {}), out)
        self.log("uniform's learning rate: %s" % base.fmt_lr(pick))

    # ---- commands -----------------------------------------------------------------------

    def command(self, kind, t):
        z = self.z
        if kind in ("pretrain", "start"):
            return super().command(kind, t)
        if kind == "run" and t.get("validation") and t.get("phase") == 3:
            kl_2, _ = self.phase_kl(t["arm"], 2)
            kl_u, _ = self.uniform_whole_kl()
            if not phase3_needed(kl_2, kl_u):
                base.write_json(self.result_path(kind, t), dict(
                    variant=TUNE_VARIANT + "-validation", arm=t["arm"], seed=t["seed"], phase=3, skipped=True,
                    why="phase 2's whole-run KL %.4g is within %.2fx of uniform's %.4g" % (kl_2, KL_TOLERANCE, kl_u)))
                return None
        validation = t.get("validation", False)
        run_dir = self.run_dir(kind, t)
        common = self.common_sets(t, run_dir)
        if kind == "calib":  # phase 1: a short constant-rate run, no evaluation: its per-step update KL
            lr = self.phase_lr(t)
            t["lr"] = lr
            sets = [x for x in common if not x.startswith("data.eval=")] + self.sets_of(t["arm"]) + [
                "data.eval=", "optim.lr=%g" % lr, "optim.steps=%d" % z["calib_steps"], "optim.lr_decay=false",
                "run.eval_every=0", "run.dump_rollouts=false"]
        else:
            if validation:
                lr = self.phase_lr(t) if t.get("phase") else t["lr"]
            else:
                lr = self.chosen_lr(t["arm"])
            t["lr"] = lr
            eval_every = z["steps"] if validation else z["eval_every"]
            sets = common + self.sets_of(t["arm"]) + [
                "optim.lr=%r" % lr, "optim.steps=%d" % z["steps"], "run.eval_every=%d" % eval_every,
                "eval.samples=%d" % z["mid_samples"], "run.dump_rollouts=%s" % ("false" if validation else "true")]
        return self.resume_or_start(run_dir, sets)  # a resumed run keeps the rate in its config


def git_commit():
    """The egca commit of the binaries: EGCA_BUILD_DIR/EGCA_COMMIT when the build has one (a
    copy of the registered commit's binaries, PREREGISTRATION.md), else HEAD of the checkout the
    driver runs from, with '-dirty' when tracked files differ."""
    build = os.environ.get("EGCA_BUILD_DIR", os.path.join(base.ROOT, "build"))
    stamp = os.path.join(build, "EGCA_COMMIT")
    if os.path.exists(stamp):
        with open(stamp) as f:
            return f.read().strip()
    try:
        head = subprocess.run(["git", "-C", base.ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", base.ROOT, "diff", "--quiet", "HEAD", "--"]).returncode != 0
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def primary_pilot_row(st, arm):
    """A secondary cell that is also a pilot candidate keeps the pilot's rate."""
    return st.load("choose_signed", {})["candidates"][arm]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes for the slow-labelled test")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (each uses one thread)")
    ap.add_argument("--work", help="run directories, checkpoints, pre-trained models, logs "
                                   "(default runs/credit-study-2, or runs/credit-study-2-quick)")
    ap.add_argument("--results", help="result JSON files (default docs/results/credit-study-2; --quick: WORK/results)")
    ap.add_argument("--blocks", default="tuning,primary,secondary",
                    help="which blocks, comma-separated: tuning, primary, secondary (primary and secondary "
                         "include the tuning they need)")
    ap.add_argument("--variants", help="only these variants' runs, comma-separated (default: all)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and what is done, run nothing")
    args = ap.parse_args()
    args.pretrain_steps = 0
    if args.jobs < 1:
        print("study2.py: --jobs must be >= 1", file=sys.stderr)
        return 2
    bad = [b for b in args.blocks.split(",") if b not in ("tuning", "primary", "secondary")]
    if bad:
        print("study2.py: --blocks: unknown block '%s' (tuning, primary, secondary)" % bad[0], file=sys.stderr)
        return 2
    bad = [v for v in (args.variants or "v0").split(",") if v not in ("v0", "v1", "v2")]
    if bad:
        print("study2.py: --variants: unknown variant '%s' (v0, v1, v2)" % bad[0], file=sys.stderr)
        return 2
    return base.lock_and_run(Study2(args), "study2.py")


if __name__ == "__main__":
    sys.exit(main())
