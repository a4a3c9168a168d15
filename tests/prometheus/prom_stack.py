"""The stack the tests/prometheus tests read: a real Pushgateway and a real Prometheus
(Debian's packages, loopback, temporary folders) fed by 30 real tracked runs with export
on, started once for the session: the stores the dashboard's Prometheus source, the Grafana
panels and the alerting rules are tested against.

The runs (0.4 s each, sampled every 0.1 s, up to 4 at a time):

- ``etl-cli``: 3 ``resource-tracker run --job etl-cli`` commands (the last one exits 3);
- ``report-env``: 3 ``resource-tracker run`` commands under ``RESOURCE_TRACKER_JOB``;
- ``train-lib``: 10 ``ResourceTracker(job="train-lib")`` runs whose memory grows 6 MiB a run;
- ``score-lib``: 10 runs asking 4 GiB and 4 cores, using a fraction (over-provisioned);
- ``risky-lib``: 4 runs asking 64 MiB, one after the other, the newest peaking above it (at
  risk);
- ``killed-lib``: one process tracking itself, its memory at what it asks, that
  SIGKILLs itself once two live points went out (no summary: only its live gauges stay,
  with the evidence of an OOM kill: its last reading near its ask).

Prometheus loads docs/prometheus/*.yml and evaluates them every second. Nothing waits on a
constant: the fixture (conftest.py) polls Prometheus until the data is there (a deadline).
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "export"))  # servers


RULE_FILES = sorted(glob.glob(os.path.join(ROOT, "docs", "prometheus", "*.yml")))
INTERVAL = 0.1
#: runs made at most for one wanted run whose summary does not reach the Pushgateway
ATTEMPTS = 3
#: no catalog (the final push does not price the findings: Prometheus has no prices), so
#: that the final push fits its 2 s budget on a busy machine too (tests/export tests it)
NO_CATALOG = {"RESOURCE_TRACKER_EMBEDDED_CATALOG": "off", "RESOURCE_TRACKER_KEEPER_URL": "off"}
#: job -> runs the fixture makes
RUNS = {"etl-cli": 3, "report-env": 3, "train-lib": 10, "score-lib": 10, "risky-lib": 4}
#: the run of risky-lib that peaks above its 64 MiB ask (the newest)
RISKY_RUN = 3

# A workload holding `mib` MiB (every page written) for 0.4 s, then printing its own peak RSS
# (KiB, VmHWM: ru_maxrss would carry the forking parent's) and exiting with `code`.
WORKLOAD = (
    "import sys, time\n"
    "mib, code = int(sys.argv[1]), int(sys.argv[2])\n"
    "b = bytearray(mib << 20); b[::4096] = b'x' * len(b[::4096])\n"
    "time.sleep(0.4)\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "print(hwm.split()[1], flush=True)\n"
    "sys.exit(code)\n"
)


@dataclass
class Run:
    """One tracked run: its job, the tracked pid, the workload's own peak RSS (MiB), the
    command's exit code and, for the library runs, the tracker's own peak memory (MiB) and
    what it asked."""

    job: str
    pid: int
    maxrss_mib: float
    exit_code: int = 0
    peak_mib: Optional[float] = None
    asked: Dict[str, float] = field(default_factory=dict)


# A process tracking itself with export on, holding 40 MiB, asking (as an integration asks)
# what its RSS then is (at its ask), killed by SIGKILL (by itself) once two live points went out
# after the ask was set;
# it prints its VmHWM (KiB) first.
KILLED = (
    "import os, signal, time\n"
    "from resource_tracker import ResourceTracker\n"
    "t = ResourceTracker(interval=0.1, export='pushgateway', job='killed-lib',"
    " discover_cloud=False)\n"
    "b = bytearray(40 << 20); b[::4096] = b'x' * len(b[::4096])\n"
    "rss = [l for l in open('/proc/self/status') if l.startswith('VmRSS:')][0]\n"
    "t.extra['resources_asked'] = {'memory': int(rss.split()[1]) / 1024}\n"
    "sent = lambda: t.export_report()['targets']['pushgateway']['sent']\n"
    "first, deadline = sent(), time.monotonic() + 60\n"
    "while sent() < first + 2:  # two pushes that carry the ask (a loaded machine may have sent\n"
    "    # its first ones before it was set)\n"
    "    assert time.monotonic() < deadline, t.export_report()\n"
    "    time.sleep(0.05)\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
    "print(hwm.split()[1], flush=True)\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n"
)


@dataclass
class Stack:
    """The servers, the runs whose summaries the Pushgateway holds and the count per job
    (read from the Pushgateway's own API: the ground truth Prometheus must show)."""

    pushgateway: object
    prometheus: object
    runs: List[Run]
    expected: Dict[str, int]
    started: float
    killed: Run
    forgotten: List[Run] = field(default_factory=list)


def _library_run(job: str, mib: int, asked: Optional[dict]) -> Run:
    from resource_tracker import ResourceTracker

    proc = subprocess.Popen(
        [sys.executable, "-c", WORKLOAD, str(mib), "0"], stdout=subprocess.PIPE, text=True
    )
    tracker = ResourceTracker(
        pid=proc.pid, interval=INTERVAL, export="pushgateway", job=job, discover_cloud=False
    )
    out, _ = proc.communicate(timeout=60)
    if asked:  # what an integration asks (as Metaflow's @resources): the insights judge it
        tracker.extra["resources_asked"] = dict(asked, source="test ask")
    tracker.stop()
    peak = tracker.stats()[_memory_key()]["max"] / 1024
    return Run(job, tracker.pid, int(out) / 1024, 0, peak, dict(asked or {}))


def _memory_key() -> str:
    from resource_tracker.registry import column

    return column("process", "memory").key


def _cli_run(job: str, mib: int, code: int, env: dict, named: bool) -> Run:
    import json
    import tempfile

    args = [sys.executable, "-m", "resource_tracker", "run", "--interval", str(INTERVAL)]
    args += ["--quiet", "--export", "pushgateway"] + (["--job", job] if named else [])
    with tempfile.TemporaryDirectory() as folder:
        args += ["--format", "json", "--output", folder]
        args += ["--", sys.executable, "-c", WORKLOAD, str(mib), str(code)]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == code, done.stderr
        with open(os.path.join(folder, "resource-tracker.json")) as f:
            pid = json.load(f)["pid"]
    return Run(job, pid, int(done.stdout) / 1024, code)


def held_runs(pushgateway_url: Optional[str] = None) -> set:
    """(job, pid) of every Pushgateway group holding a run summary (its end timestamp)."""
    import json
    import urllib.request

    base = pushgateway_url or os.environ["RESOURCE_TRACKER_PUSHGATEWAY_URL"]
    url = base + "/api/v1/metrics"
    with urllib.request.urlopen(url, timeout=30) as answer:
        groups = json.load(answer)["data"]
    return {
        (g["labels"]["job"], int(g["labels"]["pid"]))
        for g in groups
        if "resource_tracker_run_end_timestamp_seconds" in g and "pid" in g["labels"]
    }


#: the runs whose groups _forget deleted: to Prometheus, runs without a summary (killed)
FORGOTTEN: List[Run] = []


def _forget(run: Run) -> None:
    """Deletes the group of a run whose summary did not arrive (its live series only)."""
    import socket

    FORGOTTEN.append(run)
    from prometheus_client import delete_from_gateway

    key = {"instance": socket.gethostname(), "pid": str(run.pid)}
    url = os.environ["RESOURCE_TRACKER_PUSHGATEWAY_URL"]
    delete_from_gateway(url, job=run.job, grouping_key=key)


def _until_held(call) -> Run:
    """call() again (its group deleted) while its summary did not reach the Pushgateway: on
    a machine too busy for the final push's 2 s budget (tests/export tests the budget)."""
    for _ in range(ATTEMPTS):
        run = call[0](*call[1:])
        if (run.job, run.pid) in held_runs():
            return run
        _forget(run)
    raise AssertionError(f"{call[1]}: no summary reached the Pushgateway in {ATTEMPTS} runs")


def _killed_run() -> Run:
    """killed-lib's run: its pid, its own VmHWM (MiB), killed by SIGKILL."""
    proc = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == -9 and out, (proc.returncode, out)
    return Run("killed-lib", proc.pid, int(out) / 1024, -9)


def _risky_runs(n: int) -> List[Run]:
    """risky-lib's runs one after the other (asking 64 MiB): the newest peaks above it."""
    ask = {"memory": 64}
    return [
        _until_held((_library_run, "risky-lib", 96 if i == RISKY_RUN else 20, ask))
        for i in range(n)
    ]


def _warm_up() -> None:
    """The export's modules and a run summary once, before the runs: the runs' final pushes
    (2 s, in threads sharing this process) do not all import them at once."""
    import prometheus_client  # noqa: F401

    from resource_tracker import ResourceTracker
    from resource_tracker.export import pipeline, pushgateway  # noqa: F401
    from resource_tracker.export.summary import run_summary

    with mock.patch.dict(os.environ, NO_CATALOG):
        warm = ResourceTracker(interval=INTERVAL)
        warm.wait_for_samples(2)
        warm.stop()
        run_summary(warm)


def _feed(pushgateway_url: str) -> Tuple[List[Run], Run]:
    env = dict(os.environ, RESOURCE_TRACKER_PUSHGATEWAY_URL=pushgateway_url, **NO_CATALOG)
    env_job = dict(env, RESOURCE_TRACKER_JOB="report-env")
    calls = [(_cli_run, "etl-cli", 20, i // 2 * 3, env, True) for i in range(3)]
    calls += [(_cli_run, "report-env", 20, 0, env_job, False) for _ in range(3)]
    calls += [(_library_run, "train-lib", 20 + 6 * i, None) for i in range(10)]
    calls += [(_library_run, "score-lib", 20, {"memory": 4096, "cpu": 4}) for _ in range(10)]
    _warm_up()
    with mock.patch.dict(os.environ, env), ThreadPoolExecutor(max_workers=4) as pool:
        risky = pool.submit(_risky_runs, RUNS["risky-lib"])
        killed = pool.submit(_killed_run)
        runs = list(pool.map(lambda call: call[0](*call[1:]), calls))
        held = held_runs()  # seconds after the last stop(): every push received is in
        for i, run in enumerate(runs):
            if (run.job, run.pid) not in held:
                _forget(run)
                runs[i] = _until_held(calls[i])
        return runs + risky.result(), killed.result()
