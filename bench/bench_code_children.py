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

#: The command: N bare interpreters one after the other; writes each one's wall and CPU. Under
#: ``run --code`` each is paired with one started without the agent (the agent's directory
#: taken out of PYTHONPATH), right after it: the same load, the same tracked tree.
STARTER = """\
import json, os, sys, time
agent = os.environ.get("RESOURCE_TRACKER_CODE_AGENT_DIR")
bare_env = dict(os.environ)
if agent:
    path = [p for p in bare_env["PYTHONPATH"].split(os.pathsep) if p != agent]
    bare_env["PYTHONPATH"] = os.pathsep.join(path)
def child(env):
    start = time.monotonic()
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], env)
    _, status, usage = os.wait4(pid, 0)
    return [time.monotonic() - start, usage.ru_utime + usage.ru_stime, status]
found = {"children": [], "bare": []}
for _ in range(int(sys.argv[1])):
    found["children"].append(child(os.environ))
    if agent:
        found["bare"].append(child(bare_env))
with open(sys.argv[2], "w") as f:
    json.dump(found, f)
"""


def run_mode(mode, n, env, netns, spy, tmp):
    """The children's (wall s, CPU s) of one run, the tool's own CPU-seconds (py-spy's; None
    for the others), and each child's (wall s, CPU s) less its bare pair's (run --code)."""
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
        found = json.load(f)
    children, bare = found["children"], found["bare"]
    if any(status for _, _, status in children + bare):
        raise RuntimeError(f"{mode}: a child failed")
    own = None
    if mode == "py-spy":  # its own CPU: its rusage, less the command it ran (its child)
        own = usage.ru_utime + usage.ru_stime - sum(cpu for _, cpu, _ in children)
    paired = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(children, bare)]
    return [(wall, cpu) for wall, cpu, _ in children], own, paired


def measure(args):
    env, netns = bench_env(), netns_prefix()
    spy = args.py_spy or py_spy()
    spy = os.path.abspath(spy) if spy else None
    modes = ["alone", "run", "run --code"] + (["py-spy"] if spy else [])
    if spy is None:
        progress("py-spy is not installed (pip install py-spy): its row stays empty")
    results = {"machine": machine(), "load_before": os.getloadavg(), "n": args.children}
    found = {mode: {"wall": [], "cpu": [], "own": []} for mode in modes}
    paired = {"wall": [], "cpu": []}  # run --code: each child less its bare pair
    with tempfile.TemporaryDirectory(prefix="rt-bench-children-") as tmp:
        with open(os.path.join(tmp, "starter.py"), "w") as f:
            f.write(STARTER)
        for k in range(max(1, args.repeat)):
            for mode in modes:  # interleaved: a change of load touches every mode alike
                progress(f"{args.children} x `python -c pass`, {mode}, run {k + 1}")
                children, own, pairs = run_mode(mode, args.children, env, netns, spy, tmp)
                found[mode]["wall"] += [w for w, _ in children]
                found[mode]["cpu"] += [c for _, c in children]
                paired["wall"] += [w for w, _ in pairs]
                paired["cpu"] += [c for _, c in pairs]
                if own is not None:
                    found[mode]["own"].append(own / args.children)
    results["modes"], results["paired"] = found, paired
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
        "| against `run` (wall / CPU, the tool's own CPU included) |",
        "|---|---|---|---|---|",
    ]
    for mode, m in median.items():
        added = f"{_ms(m['wall'] - base['wall'])} / {_ms(m['cpu'] - base['cpu'] + (m['own'] or 0))}"
        lines.append(
            f"| {mode} | {_ms(m['wall'])} | {_ms(m['cpu'])} | {_ms(m['own'])} | "
            f"{added if mode != 'run' else '-'} |"
        )
    return "\n".join(lines + [""] + _paired_lines(results, median))


def _paired_lines(results, median):
    """The verdict: what the agent adds to a child, against its pair without the agent
    started right after it in the same run (the load and the tracked tree alike)."""
    wall, cpu = (statistics.median(results["paired"][k]) for k in ("wall", "cpu"))
    ok = wall * 1000 <= TARGET_MS and cpu * 1000 <= TARGET_MS
    bare = median["alone"]["cpu"]
    lines = [
        f"`run --code`, each child against its pair without the agent: +{_ms(wall)} wall, "
        f"+{_ms(cpu)} CPU (target <= {TARGET_MS:g} ms each: {'pass' if ok else 'FAIL'}); "
        f"{cpu / bare:.2f}x a bare interpreter's own CPU ({_ms(bare)})"
    ]
    spy = median.get("py-spy", {}).get("own")
    if spy is not None:
        lines.append(
            f"py-spy's own CPU per child: {_ms(spy)} ({spy / max(cpu, 1e-9):.1f}x the agent's)"
        )
    return lines


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
