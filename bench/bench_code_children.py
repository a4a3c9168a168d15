"""What ``resource-tracker run --code`` costs each Python process of a command (issue 41,
point 4): a command that starts N bare interpreters (``python -c pass``) one after the other,
run four ways: alone, under ``resource-tracker run`` (no ``--code``), under ``run --code``,
and under ``py-spy record --subprocesses``. Each child's wall time (spawn to reap) and CPU
(its rusage from os.wait4: its threads' too) are measured by the command itself; py-spy's
own CPU comes from its rusage.

Targets: the agent adds <= 20 ms of wall time and <= 20 ms of CPU to a child (against the
same command under ``run`` without ``--code``).

Usage (`make bench` runs it, with py-spy installed into .bench-venv):
    python bench/bench_code_children.py [--children N] [--repeat R] [--py-spy PATH] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_code import py_spy  # noqa: E402
from run import bench_env, machine, netns_prefix, progress  # noqa: E402

TARGET_MS = 20.0

#: The command: N bare interpreters one after the other; writes each one's wall and CPU.
STARTER = """\
import json, os, sys, time
children = []
for _ in range(int(sys.argv[1])):
    start = time.monotonic()
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], os.environ)
    _, status, usage = os.wait4(pid, 0)
    children.append([time.monotonic() - start, usage.ru_utime + usage.ru_stime, status])
with open(sys.argv[2], "w") as f:
    json.dump(children, f)
"""


def run_mode(mode, n, env, netns, spy, tmp):
    """The children's (wall s, CPU s) of one run, and the tool's own CPU-seconds (py-spy's;
    None for the others)."""
    starter = os.path.join(tmp, "starter.py")
    out = os.path.join(tmp, "children.json")
    command = [sys.executable, starter, str(n), out]
    cli = [sys.executable, "-m", "resource_tracker", "run", "-q", "--format", "none"]
    prefix = {
        "alone": [],
        "run": cli + ["--"],
        "run --code": cli + ["--code", "--"],
        "py-spy": [spy, "record", "--subprocesses", "--format", "raw", "--nonblocking",
                   "--output", os.path.join(tmp, "py-spy.txt"), "--"],
    }[mode]  # fmt: skip
    proc = subprocess.Popen(netns + prefix + command, env=env, stdout=subprocess.DEVNULL, cwd=tmp)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode}: the command failed ({proc.returncode})")
    with open(out) as f:
        children = json.load(f)
    if any(status for _, _, status in children):
        raise RuntimeError(f"{mode}: a child failed")
    own = None
    if mode == "py-spy":  # its own CPU: its rusage, less the command it ran (its child)
        own = usage.ru_utime + usage.ru_stime - sum(cpu for _, cpu, _ in children)
    return [(wall, cpu) for wall, cpu, _ in children], own


def measure(args):
    env, netns = bench_env(), netns_prefix()
    spy = args.py_spy or py_spy()
    spy = os.path.abspath(spy) if spy else None
    modes = ["alone", "run", "run --code"] + (["py-spy"] if spy else [])
    if spy is None:
        progress("py-spy is not installed (pip install py-spy): its row stays empty")
    results = {"machine": machine(), "load_before": os.getloadavg(), "n": args.children}
    found = {mode: {"wall": [], "cpu": [], "own": []} for mode in modes}
    with tempfile.TemporaryDirectory(prefix="rt-bench-children-") as tmp:
        with open(os.path.join(tmp, "starter.py"), "w") as f:
            f.write(STARTER)
        for k in range(max(1, args.repeat)):
            for mode in modes:  # interleaved: a change of load touches every mode alike
                progress(f"{args.children} x `python -c pass`, {mode}, run {k + 1}")
                children, own = run_mode(mode, args.children, env, netns, spy, tmp)
                found[mode]["wall"] += [w for w, _ in children]
                found[mode]["cpu"] += [c for _, c in children]
                if own is not None:
                    found[mode]["own"].append(own / args.children)
    results["modes"] = found
    results["load_after"] = os.getloadavg()
    return results


def _ms(x):
    return "n/a" if x is None else f"{1000 * x:.1f} ms"


def render(results):
    modes = results["modes"]
    median = {m: {k: statistics.median(v) if v else None for k, v in f.items()}
              for m, f in modes.items()}  # fmt: skip
    base = median["run"]
    lines = [
        f"Machine: {results['machine']}; load average before "
        + ", ".join(f"{x:.2f}" for x in results["load_before"])
        + ", after "
        + ", ".join(f"{x:.2f}" for x in results["load_after"])
        + f"; {results['n']} children a run, medians per child",
        "",
        "| how the command ran | wall per child | CPU per child | tool's own CPU per child "
        "| added to a child (wall / CPU) against `run` | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for mode, m in median.items():
        added_wall, added_cpu = m["wall"] - base["wall"], m["cpu"] - base["cpu"]
        spy_cpu = m["own"]
        added = f"{_ms(added_wall)} / {_ms(added_cpu + (spy_cpu or 0.0))}"
        verdict = ""
        if mode == "run --code":
            ok = added_wall * 1000 <= TARGET_MS and added_cpu * 1000 <= TARGET_MS
            verdict = f"{'pass' if ok else 'FAIL'} (<= {TARGET_MS:g} ms each)"
        lines.append(
            f"| {mode} | {_ms(m['wall'])} | {_ms(m['cpu'])} | {_ms(spy_cpu)} | "
            f"{added if mode != 'run' else '-'} | {verdict} |"
        )
    bare = median["alone"]["cpu"]
    code = median["run --code"]["cpu"] - base["cpu"]
    lines.append("")
    lines.append(
        f"The agent adds {code / bare:.2f}x a bare interpreter's own CPU ({_ms(bare)})"
        + (
            f"; py-spy's own CPU per child is {median['py-spy']['own'] / max(code, 1e-9):.1f}x "
            "the agent's added CPU"
            if "py-spy" in median and median["py-spy"]["own"] is not None
            else ""
        )
    )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, default=20, help="children a run (20)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (3)")
    parser.add_argument("--py-spy", help="the py-spy executable (default: beside python, PATH)")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    started = time.monotonic()
    results = measure(args)
    print(render(results))
    if args.json:  # every child's figures, for a closer look
        with open(args.json, "w") as out:
            out.write(json.dumps(results, indent=1))
    progress(f"done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
