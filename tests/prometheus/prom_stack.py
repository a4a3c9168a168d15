"""The stack the tests/prometheus tests read: a real Pushgateway and a real Prometheus
(Debian's packages, loopback, temporary folders) fed by 30 real tracked runs with export
on, started once for the session: the stores the dashboard's Prometheus source, the Grafana
panels and the alerting rules are tested against.

The runs (0.4 s each, sampled every 0.1 s, up to 8 at a time):

- ``etl-cli``: 3 ``resource-tracker run --job etl-cli`` commands (the last one exits 3);
- ``report-env``: 3 ``resource-tracker run`` commands under ``RESOURCE_TRACKER_JOB``;
- ``train-lib``: 10 ``ResourceTracker(job="train-lib")`` runs whose memory grows 6 MiB a run;
- ``score-lib``: 10 runs asking 4 GiB and 4 cores, using a fraction (over-provisioned);
- ``risky-lib``: 4 runs asking 64 MiB, one after the other, the newest peaking above it (at
  risk).

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
from typing import Dict, List, Optional
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "export"))  # servers


RULE_FILES = sorted(glob.glob(os.path.join(ROOT, "docs", "prometheus", "*.yml")))
INTERVAL = 0.1
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
    """One tracked run: its job, the workload's own peak RSS (MiB) and, for the library
    runs, the tracker's own figures (peak memory, MiB; the pid)."""

    job: str
    maxrss_mib: float
    exit_code: int = 0
    peak_mib: Optional[float] = None
    pid: Optional[int] = None
    asked: Dict[str, float] = field(default_factory=dict)


@dataclass
class Stack:
    pushgateway: object
    prometheus: object
    runs: List[Run]
    started: float

    def count(self, job: str) -> int:
        return sum(1 for r in self.runs if r.job == job)


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
    final = tracker.stats()["export"]["targets"]["pushgateway"]
    assert final["final"] == "sent", final
    peak = tracker.stats()[_memory_key()]["max"] / 1024
    return Run(job, int(out) / 1024, 0, peak, tracker.pid, dict(asked or {}))


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
            final = json.load(f)["extra"]["export"]["targets"]["pushgateway"]
    assert final["final"] == "sent", final
    return Run(job, int(done.stdout) / 1024, code)


def _risky_runs(n: int) -> List[Run]:
    """risky-lib's runs one after the other (asking 64 MiB): the newest peaks above it."""
    ask = {"memory": 64}
    return [_library_run("risky-lib", 96 if i == RISKY_RUN else 20, ask) for i in range(n)]


def _feed(pushgateway_url: str) -> List[Run]:
    env = dict(os.environ, RESOURCE_TRACKER_PUSHGATEWAY_URL=pushgateway_url, **NO_CATALOG)
    env_job = dict(env, RESOURCE_TRACKER_JOB="report-env")
    calls = [(_cli_run, "etl-cli", 20, i // 2 * 3, env, True) for i in range(3)]
    calls += [(_cli_run, "report-env", 20, 0, env_job, False) for _ in range(3)]
    calls += [(_library_run, "train-lib", 20 + 6 * i, None) for i in range(10)]
    calls += [(_library_run, "score-lib", 20, {"memory": 4096, "cpu": 4}) for _ in range(10)]
    calls += [(_risky_runs, RUNS["risky-lib"])]
    with mock.patch.dict(os.environ, env), ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(lambda call: call[0](*call[1:]), calls))
    return [run for runs in done for run in (runs if isinstance(runs, list) else [runs])]
