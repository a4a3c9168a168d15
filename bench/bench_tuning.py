"""Replay of right-sizing policies over step histories, enforced as a kubelet enforces them.

Usage: python bench/bench_tuning.py [--platform kubernetes|batch] [--holdout N] [--json F]

Each scenario is the history of one step: per run, what it truly needs (its memory peak, its
busy cores, its GPUs), how long it runs at full speed, the code version it runs, and
whether it is preempted. Each run asks what a policy says from the runs before it and is
enforced like a kubelet: memory above the ask is an OOM kill (the attempt is lost and run
again, up to 4 attempts, as ``@retry`` does); CPU above the ask is throttled (the run takes
need / ask longer). A preempted attempt (spot, node lost) is killed at 40% of its run.

Policies:

- ``tuned``: ``resource_tracker.tuning.tune_resources``, the rule of ``@track_resources(
  tune=True)``, replayed over the records the decorator keeps: each attempt's record made
  by ``run_record`` from the ``stats()`` it would have measured (process peak, CPU p90, its
  run-queue wait, the cgroup's limits, throttled periods and time, OOM kills), a killed
  attempt's record being its last live one (status ``killed``), the history cut by
  ``limit_runs`` to the newest 5 runs, as the decorator passes it;
- ``fractional``: the same rule with ``RESOURCE_TRACKER_TUNED_CPU=fractional``: CPU in
  quarters of a core (what Kubernetes takes; on ``--platform batch`` the platform rounds it
  up to whole vCPUs again);
- ``krr``: KRR-like: memory the highest peak seen x 1.15, CPU the 95th percentile of the
  usage seen (a throttled run is seen at its limit; an OOM-killed one at its limit);
- ``vpa``: VPA-like: memory the 90th percentile of the peaks x 1.15, after an OOM kill a
  peak of max(1.2 x the limit, limit + 100 MiB) is added; CPU the 90th percentile x 1.15;
- ``oracle``: knows each run's true peak (+10%, at least 128 MiB) and its need in whole
  cores: never killed, never throttled.

The first run of each step asks what the code asks (every policy alike) and is not counted:
the figures are the memory-hours and core-hours from each step's second run on (killed
attempts included), as ratios to the oracle's, per scenario and in total, and the kills:
``OOM`` (avoidable ones, where a run needed no more than 1.1 x a peak seen before, in
brackets; a run that went through shows its peak) and preemptions. ``--holdout N`` adds N
histories drawn at random (seed 41) from the same kinds, which the rule was not tuned on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from resource_tracker.tuning import CPU_STEPS, limit_runs, run_record, tune_resources  # noqa: E402

#: Attempts of one run (``@retry(times=3)``).
ATTEMPTS = 4
#: Where a preempted attempt is killed (share of its run).
PREEMPT_AT = 0.4
#: The machine the steps run on (cores), for the records.
NODE_CORES = 64.0
#: A kill is avoidable when the run needed at most this much more than a peak seen before
#: (the oracle's own margin).
JUMP = 1.1
HISTORY = 5


@dataclass
class Run:
    peak: float  # MiB the run truly needs at its peak
    cpu: float  # busy cores it truly needs
    hours: float = 1.0  # at full speed
    code: str = "v1"
    gpu: float = 0.0
    preempted: int = 0  # attempts preempted before one runs through
    fast: bool = False  # allocates so fast that no live reading comes near the limit


@dataclass
class Scenario:
    name: str
    asked: Dict[str, float]
    runs: List[Run]


@dataclass
class Result:
    mem_h: float = 0.0
    core_h: float = 0.0
    oom: int = 0
    avoidable: int = 0
    preempted: int = 0
    failed_runs: int = 0
    asks: List[Dict[str, float]] = field(default_factory=list)


# -- scenarios ----------------------------------------------------------------------------


def _noisy(rng: random.Random, value: float, spread: float) -> float:
    return value * (1 + rng.uniform(-spread, spread))


def scenarios(seed: int = 37) -> List[Scenario]:
    """The named scenarios of issue 37 and more."""
    rng = random.Random(seed)
    n = 10

    def steady(peak: float, cpu: float, spread: float = 0.03, **kw: Any) -> List[Run]:
        return [Run(_noisy(rng, peak, spread), _noisy(rng, cpu, spread), **kw) for _ in range(n)]

    return [
        Scenario("steady", {"cpu": 2, "memory": 4096}, steady(1500, 1.5)),
        Scenario("under-asked", {"cpu": 1, "memory": 512}, steady(900, 0.8)),
        Scenario("growing data", {"cpu": 1, "memory": 1024},
                 [Run(600 * 1.08**i, 0.7 * 1.05**i) for i in range(12)]),
        Scenario("CPU-bound", {"cpu": 1, "memory": 1024}, steady(700, 3.4, 0.02)),
        Scenario("data-dependent", {"cpu": 2, "memory": 2048},
                 [Run(rng.uniform(1000, 3000), rng.uniform(1.0, 2.0)) for _ in range(12)]),
        Scenario("shrank after a refactor", {"cpu": 2, "memory": 6144},
                 [Run(_noisy(rng, 4096, 0.02), 1.2) for _ in range(4)]
                 + [Run(_noisy(rng, 800, 0.02), 1.2, code="v2") for _ in range(8)]),
        Scenario("tiny", {"cpu": 1, "memory": 1024}, steady(60, 0.1, hours=0.05)),
        Scenario("40 GiB training", {"cpu": 8, "memory": 65536},
                 steady(40960, 7.2, 0.02, hours=4.0, gpu=1)),
        Scenario("over-provisioned 16 GiB", {"cpu": 8, "memory": 16384}, steady(900, 0.9)),
        Scenario("spiky outlier", {"cpu": 1, "memory": 2048},
                 [Run(2300 if i == 5 else _noisy(rng, 1000, 0.03), 0.9) for i in range(n)]),
        Scenario("phases", {"cpu": 2, "memory": 2048},
                 [Run(2400 if i % 4 == 3 else _noisy(rng, 800, 0.03), 1.5) for i in range(12)]),
        Scenario("GPU step", {"cpu": 4, "memory": 16384, "gpu": 1},
                 steady(6000, 1.0, gpu=1, hours=2.0)),
        Scenario("data doubles once", {"cpu": 1, "memory": 2048},
                 [Run(_noisy(rng, 1200 if i < 5 else 2400, 0.02), 1.0) for i in range(n)]),
        Scenario("spot preemptions", {"cpu": 1, "memory": 1024},
                 [Run(_noisy(rng, 300, 0.03), 0.5, preempted=2 if i % 2 else 0)
                  for i in range(n)]),
        Scenario("fast allocator, under-asked", {"cpu": 1, "memory": 256},
                 steady(700, 1.0, fast=True)),
    ]  # fmt: skip


def holdout(count: int, seed: int = 41) -> List[Scenario]:
    """``count`` histories drawn at random: the same kinds, other figures."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        base = math.exp(rng.uniform(math.log(100), math.log(30000)))
        cpu = rng.choice([0.3, 0.9, 1.7, 2.6, 5.5])
        asked = {"cpu": rng.choice([1, 2, 4, 8]), "memory": rng.choice([512, 2048, 8192, 32768])}
        kind = rng.choice(["steady", "growing", "varying", "refactor", "jump", "preempt"])
        runs = []
        for i in range(12):
            peak = base * (1 + rng.uniform(-0.05, 0.05))
            if kind == "growing":
                peak *= 1.06**i
            elif kind == "varying":
                peak = base * rng.uniform(0.6, 1.4)
            elif kind in ("refactor", "jump") and i >= 6:
                peak *= 0.3 if kind == "refactor" else 1.8
            code = "v2" if kind == "refactor" and i >= 6 else "v1"
            preempted = 1 if kind == "preempt" and rng.random() < 0.4 else 0
            runs.append(Run(peak, _noisy(rng, cpu, 0.05), code=code, preempted=preempted))
        out.append(Scenario(f"holdout {k + 1} ({kind})", asked, runs))
    return out


# -- the records a tuned step keeps ---------------------------------------------------------


def _stats(run: Run, ask: Dict[str, float], reading: float, seconds: float) -> Dict[str, Any]:
    """The stats() a tracked attempt measures under ``ask`` (kubelet limits), up to a memory
    ``reading`` after ``seconds``."""
    got = min(run.cpu, ask["cpu"])
    throttled = max(0.0, run.cpu - ask["cpu"])
    periods = seconds / 0.1
    return {
        "timestamp": {"duration": seconds, "samples": int(seconds)},
        "process_memory": {"max": reading * 1024, "mean": reading * 900},
        "process_cpu_usage": {"mean": got * 0.95, "p90": got, "max": got},
        # its tasks runnable beyond the quota wait for it (the run-queue wait)
        "process_cpu_wait": {"mean": throttled, "p90": throttled, "max": throttled},
        "process_gpu_utilized": {"max": run.gpu, "mean": run.gpu},
        "system_cpu_usage": {"p90": NODE_CORES * 0.5, "mean": NODE_CORES * 0.4},
        "cgroup": {
            "memory_limit_mib": ask["memory"], "cpu_limit_cores": ask["cpu"],
            "memory_mib": reading, "memory_peak_mib": reading,
            "cpu_seconds": got * seconds, "cpu_periods": periods,
            "cpu_throttled_periods": periods if throttled > 0.05 else 0,
            "cpu_throttled_seconds": throttled * seconds, "oom_kills": 0,
        },
    }  # fmt: skip


def _record(run: Run, ask: Dict[str, float], outcome: str, seconds: float,
            reading: float, tag: Dict[str, Any]) -> Dict[str, Any]:  # fmt: skip
    """The record the decorator keeps of an attempt: final, or its last live one."""
    status = "ok" if outcome == "ok" else "running"
    record = run_record(_stats(run, ask, reading, seconds), ask, NODE_CORES, status)
    record.update(tag, final=outcome == "ok")
    if outcome != "ok":
        record["status"] = "killed"  # read back without a final record (read_record)
    return record


# -- the policies -------------------------------------------------------------------------

Ask = Dict[str, float]
Policy = Callable[[List[Dict[str, Any]], Scenario, Run, str], Ask]


def tuned(platform: str, cpu_step: float = CPU_STEPS["whole"]) -> Policy:
    """The rule as the decorator calls it (the step's current code known), its CPU in
    ``cpu_step`` s (``RESOURCE_TRACKER_TUNED_CPU``)."""

    def ask(records: List[Dict[str, Any]], sc: Scenario, run: Run, _: str) -> Ask:
        tuning = tune_resources(limit_runs(records, HISTORY), sc.asked, code=run.code,
                                cpu_step=cpu_step)  # fmt: skip
        return {**sc.asked, **tuning.resources}

    return ask


def _pct(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(q * len(ordered))) - 1)]


def krr(records: List[Dict[str, Any]], sc: Scenario, run: Run, _: str) -> Ask:
    if not records:
        return dict(sc.asked)
    peaks = [r["seen_peak"] for r in records]
    cpus = [r["seen_cpu"] for r in records]
    return {**sc.asked, "memory": max(peaks) * 1.15, "cpu": _pct(cpus, 0.95)}


def vpa(records: List[Dict[str, Any]], sc: Scenario, run: Run, _: str) -> Ask:
    if not records:
        return dict(sc.asked)
    peaks = [r["seen_peak"] for r in records]
    for r in records:
        if r["oom"]:
            peaks.append(max(1.2 * r["had"], r["had"] + 100))
    cpus = [r["seen_cpu"] for r in records]
    return {**sc.asked, "memory": _pct(peaks, 0.9) * 1.15, "cpu": _pct(cpus, 0.9) * 1.15}


def oracle(records: List[Dict[str, Any]], sc: Scenario, run: Run, _: str) -> Ask:
    return {**sc.asked, "memory": max(run.peak * 1.1, 128.0), "cpu": float(math.ceil(run.cpu))}


POLICIES: Dict[str, Callable[[str], Policy]] = {
    "tuned": tuned, "fractional": lambda p: tuned(p, CPU_STEPS["fractional"]),
    "krr": lambda _: krr, "vpa": lambda _: vpa, "oracle": lambda _: oracle,
}  # fmt: skip


# -- enforcement --------------------------------------------------------------------------


def _on_platform(ask: Ask, platform: str) -> Ask:
    """What the platform gives: whole vCPUs on Batch, millicores on Kubernetes; MiB."""
    cpu = float(ask.get("cpu") or 1)
    cpu = math.ceil(cpu - 1e-9) if platform == "batch" else math.ceil(cpu * 1000 - 1e-6) / 1000
    return {"cpu": max(cpu, 0.001), "memory": math.ceil(float(ask.get("memory") or 0))}


def _attempt(run: Run, ask: Ask, attempt: int) -> Tuple[str, float, float]:
    """(outcome, share of the run it lasted, last memory reading) of one attempt."""
    if attempt < run.preempted:
        return "preempted", PREEMPT_AT, run.peak * PREEMPT_AT
    if run.peak > ask["memory"]:
        share = ask["memory"] / run.peak  # memory grows through the run
        return "oom", share, ask["memory"] * (0.3 if run.fast else 0.97)
    return "ok", 1.0, run.peak


def replay(sc: Scenario, name: str, platform: str) -> Result:
    """The scenario under one policy."""
    policy, res = POLICIES[name](platform), Result()
    records: List[Dict[str, Any]] = []
    seen_before = 0.0  # the highest peak of the runs that went through
    for i, run in enumerate(sc.runs):
        for attempt in range(ATTEMPTS):
            first = i == 0 and attempt == 0
            ask = _on_platform(sc.asked if first else policy(records, sc, run, name), platform)
            outcome, share, reading = _attempt(run, ask, attempt)
            wall = run.hours * share * max(1.0, run.cpu / ask["cpu"])
            if i > 0:
                res.mem_h += ask["memory"] * wall
                res.core_h += ask["cpu"] * wall
                res.oom += outcome == "oom"
                res.avoidable += outcome == "oom" and run.peak <= JUMP * seen_before
                res.preempted += outcome == "preempted"
            tag = {"run": str(i), "attempt": attempt, "code": run.code}
            record = _record(run, ask, outcome, wall * 3600, reading, tag)
            seen = ask["memory"] if outcome == "oom" else reading  # the kubelet's view
            record.update(seen_peak=seen, seen_cpu=min(run.cpu, ask["cpu"]),
                          oom=outcome == "oom", had=ask["memory"])  # fmt: skip
            records.insert(0, record)
            if outcome == "ok":
                seen_before = max(seen_before, run.peak)
                break
        else:
            res.failed_runs += i > 0
        res.asks.append(ask)
    return res


# -- the table ----------------------------------------------------------------------------


def measure(scs: List[Scenario], platform: str) -> Dict[str, Dict[str, Result]]:
    return {sc.name: {p: replay(sc, p, platform) for p in POLICIES} for sc in scs}


def _cells(res: Result, base: Result) -> str:
    kills = f"{res.oom} ({res.avoidable})" if res.oom else "0"
    return (f"{res.mem_h / base.mem_h:.2f} | {res.core_h / base.core_h:.2f} | {kills}"
            f"{f' +{res.preempted} pre' if res.preempted else ''}")  # fmt: skip


def table(results: Dict[str, Dict[str, Result]], title: str) -> List[str]:
    names = [p for p in POLICIES if p != "oracle"]
    head = " | ".join(f"{p} mem | {p} CPU | {p} kills" for p in names)
    lines = [f"### {title}", "", f"| scenario | {head} |", "|---" * (1 + 3 * len(names)) + "|"]
    total = {p: Result() for p in POLICIES}
    for sc, by in results.items():
        lines.append(f"| {sc} | " + " | ".join(_cells(by[p], by["oracle"]) for p in names) + " |")
        for p, r in by.items():
            t = total[p]
            t.mem_h, t.core_h = t.mem_h + r.mem_h, t.core_h + r.core_h
            t.oom, t.avoidable, t.preempted = (t.oom + r.oom, t.avoidable + r.avoidable,
                                               t.preempted + r.preempted)  # fmt: skip
    lines.append("| **total** | " + " | ".join(_cells(total[p], total["oracle"]) for p in names)
                 + " |")  # fmt: skip
    return lines


def summary(results: Dict[str, Dict[str, Result]]) -> Dict[str, Dict[str, float]]:
    """Per policy: the totals as ratios to the oracle, and the kills."""
    out = {}
    for p in POLICIES:
        mem = sum(by[p].mem_h for by in results.values())
        core = sum(by[p].core_h for by in results.values())
        out[p] = {
            "memory_ratio": mem / sum(by["oracle"].mem_h for by in results.values()),
            "cpu_ratio": core / sum(by["oracle"].core_h for by in results.values()),
            "core_hours": core,
            "oom_kills": sum(by[p].oom for by in results.values()),
            "avoidable_oom_kills": sum(by[p].avoidable for by in results.values()),
            "failed_runs": sum(by[p].failed_runs for by in results.values()),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=("kubernetes", "batch"), default="kubernetes")
    parser.add_argument("--holdout", type=int, default=30, help="random histories (0: none)")
    parser.add_argument("--json", help="write the totals here")
    args = parser.parse_args()
    named = measure(scenarios(), args.platform)
    print("\n".join(table(named, f"scenarios ({args.platform}): ratio to the oracle, "
                                 "kills: OOM (avoidable) + preemptions")))  # fmt: skip
    out = {"scenarios": summary(named)}
    if args.holdout:
        held = measure(holdout(args.holdout), args.platform)
        lines = table(held, f"{args.holdout} held-out histories (seed 41)")
        print("\n" + "\n".join(lines[:4] + lines[-1:]))
        out["holdout"] = summary(held)
    print("\n" + json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
