"""Snapshots and catalog answers from outside, through the real command-line tool
(subprocesses; a pseudo-terminal where what the terminal sees matters):

- escape sequences in a snapshot's command (`stats`) or in the Keeper's server ids
  (`recommend`, a loopback Keeper stand-in) never reach the terminal;
- a 401-digit integer, NaN / Infinity, an exit status as text, server_info or cgroup_metrics
  of the wrong type: exit status 2 and one line, in all four commands;
- `stats --json` is strict JSON (no NaN / Infinity) even when the samples hold them;
- a snapshot over the size limit (RESOURCE_TRACKER_MAX_SNAPSHOT_MIB) is refused unread;
- a UTF-8 BOM is accepted.
"""

from __future__ import annotations

import base64
import json
import math
import os
import struct
import subprocess
from http.server import BaseHTTPRequestHandler

import pytest
from cli_helpers import (
    CLI,
    assert_one_line_error,
    env_with,
    pty_run,
    read_pty,
    run_cli,
    script,
    wait_pid,
)
from loopback import LoopbackHTTPServer

from resource_tracker import ResourceTracker

# an OSC window title, clear screen + cursor home, a colour, a one-byte CSI, a bell
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[H\x1b[31mred\x1b[0m\x9b1m\x07"
COMMANDS = [["stats"], ["stats", "--json"], ["recommend"], ["report", "-o", "{tmp}/r.html"]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The text of a snapshot written by a real `run` of a small Python workload (0.6 s of
    CPU time: several samples)."""
    out = tmp_path_factory.mktemp("run")
    workload = script(
        "import time\nx = bytearray(20 << 20)\nend = time.process_time() + 0.6\n"
        "while time.process_time() < end:\n    pass\n"
    )
    result = run_cli(
        "run", "-q", "--interval", "0.1", "-o", str(out), "-f", "json", "--", *workload
    )
    assert result.returncode == 0, result.stderr
    return (out / "resource-tracker.json").read_text(encoding="utf-8")


def _write(tmp_path, snap, name="snap.json"):
    path = tmp_path / name
    path.write_text(snap if isinstance(snap, str) else json.dumps(snap), encoding="utf-8")
    return str(path)


def _terminal_output(argv, env):
    """(wait status, bytes) of argv run under a new pseudo-terminal with env."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        pid, fd = pty_run(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        output = read_pty(fd, 60)
        return wait_pid(pid), output
    finally:
        os.close(fd)


def _assert_printable(output: bytes):
    """No ESC, CSI, BEL or other control byte but tab, newline and carriage return (the
    pty turns each newline into CR LF)."""
    bad = [b for b in output if (b < 0x20 and b not in b"\t\n\r") or b == 0x7F]
    assert not bad, output
    assert "\x9b" not in output.decode("utf-8", "replace"), output


def test_stats_shows_a_snapshots_command_without_its_escapes(recorded, tmp_path):
    snap = json.loads(recorded)
    snap["command"] = f"python train.py {ESCAPES} --epochs 3"
    snap["label"] = ESCAPES
    path = _write(tmp_path, snap)
    status, output = _terminal_output([*CLI, "stats", path], dict(os.environ))
    assert os.waitstatus_to_exitcode(status) == 0, output
    _assert_printable(output)
    text = output.decode()
    assert "python train.py" in text and "red" in text and "--epochs 3" in text
    assert "recommended" in text  # the whole summary was shown


class _Keeper(BaseHTTPRequestHandler):
    """A Keeper API stand-in whose /servers answer names a server with escape sequences."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        server = {"vendor_id": f"aws{ESCAPES}", "server_id": f"m5.{ESCAPES}large",
                  "name": ESCAPES, "vcpus": 2, "memory_amount": 8192, "gpu_count": 0,
                  "min_price": 0.096, "price": 0.096, "score": 100.0,
                  "cpu_architecture": "x86_64", "status": "active"}  # fmt: skip
        body = json.dumps([server] if self.path.startswith("/servers") else []).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("extra", [[], ["-n", "2"]])
def test_recommend_shows_keeper_server_names_without_their_escapes(recorded, tmp_path, extra):
    path = _write(tmp_path, recorded)
    with LoopbackHTTPServer(_Keeper) as keeper:
        env = env_with(
            RESOURCE_TRACKER_KEEPER_URL=keeper.url,
            RESOURCE_TRACKER_EMBEDDED_CATALOG="off",
            RESOURCE_TRACKER_CACHE_DIR=tmp_path / "cache",
            XDG_CACHE_HOME=tmp_path / "xdg",
        )
        for name in ("RESOURCE_TRACKER_CATALOG", "SC_DATA_DB_PATH"):
            env.pop(name, None)
        status, output = _terminal_output([*CLI, "recommend", *extra, path], env)
    assert os.waitstatus_to_exitcode(status) == 0, output
    _assert_printable(output)
    text = output.decode()
    assert "aws" in text and "m5." in text and "large" in text and "2 vCPUs" in text


def _with(recorded, *path_value):
    """The recorded snapshot with the value at a key path replaced (objects made on the way)."""
    snap = json.loads(recorded)
    *keys, value = path_value
    target = snap
    for key in keys[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[keys[-1]] = value
    return json.dumps(snap)


def _column_with(recorded, text):
    """The recorded snapshot with its process table as plain lists, one value being text."""
    snap = json.loads(recorded)
    snap["process_metrics"] = {"process_cpu_usage": [0.5, "@@"]}
    return json.dumps(snap).replace('"@@"', text)


EDGES = {
    "401-digit integer in a column": lambda r: _column_with(r, "9" * 401),
    "401-digit integer as memory_hwm": lambda r: _with(r, "memory_hwm", 10**401),
    "401-digit integer in cgroup_metrics":
        lambda r: _with(r, "cgroup_metrics", {"oom_kills": 10**401}),
    "NaN as memory_hwm": lambda r: _with(r, "memory_hwm", float("nan")),
    "1e400 in server_info":
        lambda r: _with(r, "server_info", "vcpus", 7).replace('"vcpus": 7', '"vcpus": 1e400'),
    "exit_status as text": lambda r: _with(r, "extra", "exit_status", "0"),
    "server_info.vcpus as text": lambda r: _with(r, "server_info", "vcpus", "many"),
    "server_info.cgroup a list": lambda r: _with(r, "server_info", "cgroup", [1]),
    "cgroup_metrics a list": lambda r: _with(r, "cgroup_metrics", [1]),
    "cgroup_metrics.memory_peak_mib as text":
        lambda r: _with(r, "cgroup_metrics", {"memory_peak_mib": "@@"}),
}  # fmt: skip


@pytest.mark.parametrize("edge", list(EDGES))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_damaged_snapshot_is_one_line_in_every_command(recorded, tmp_path, edge, command):
    path = _write(tmp_path, EDGES[edge](recorded))
    argv = [a.format(tmp=tmp_path) for a in command]
    assert_one_line_error(run_cli(*argv, path), f"cannot read {path}", "not a resource-tracker")
    with pytest.raises(ValueError):  # the library says the same
        ResourceTracker.loads(EDGES[edge](recorded))


def _with_samples(recorded, values):
    """The recorded snapshot with the first samples of every process column (but the
    timestamp) replaced by values (float64, as dumps() stores them)."""
    snap = json.loads(recorded)
    columns = snap["process_metrics"]["columns"]
    assert snap["process_metrics"]["rows"] > len(values) + 1, "too short a run to alter"
    for name, text in columns.items():
        raw = base64.b64decode(text)
        samples = list(struct.unpack(f"<{len(raw) // 8}d", raw))
        if name != "timestamp" and len(samples) > len(values) + 1:
            samples[1 : len(values) + 1] = values
        columns[name] = base64.b64encode(struct.pack(f"<{len(samples)}d", *samples)).decode()
    return json.dumps(snap)


def test_stats_json_is_strict_json_when_samples_hold_nan_and_infinity(recorded, tmp_path):
    path = _write(tmp_path, _with_samples(recorded, [float("nan"), float("inf")]))
    result = run_cli("stats", "--json", path)
    assert result.returncode == 0, result.stderr

    def refuse(name):
        raise AssertionError(f"stats --json printed {name}")

    stats = json.loads(result.stdout, parse_constant=refuse)
    # the same figures as stats() of the loaded run, the non-finite ones as null
    direct = ResourceTracker.loads(open(path).read()).stats()
    odd = [(table, k) for table, fields in direct.items() if isinstance(fields, dict)
           for k, v in fields.items() if isinstance(v, float) and not math.isfinite(v)]  # fmt: skip
    assert len(odd) >= 5, odd
    assert all(stats[table][k] is None for table, k in odd)
    finite = [(table, k, v) for table, fields in direct.items() if isinstance(fields, dict)
              for k, v in fields.items() if isinstance(v, float) and math.isfinite(v)]  # fmt: skip
    assert [v for _, _, v in finite if v], "no finite figure left to compare"
    assert all(stats[table][k] == v for table, k, v in finite)


def _padded(recorded, mib):
    """The recorded snapshot, valid, grown to about mib MiB by a long label."""
    snap = json.loads(recorded)
    snap["label"] = "x" * int(mib * 2**20)
    return json.dumps(snap)


# the CLI's main(), then its own peak RSS (VmHWM: of this process image only, not the
# forking test runner's pages that ru_maxrss would carry over) written to argv[1]
_WITH_PEAK = """
import sys
from resource_tracker.cli import main
status = main(sys.argv[2:])
with open("/proc/self/status") as f:
    peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as f:
    f.write(peak)
sys.exit(status)
"""


def _peak_kib(tmp_path, args, env):
    """(CompletedProcess, peak RSS in KiB) of the CLI with args."""
    where = tmp_path / "peak.txt"
    result = subprocess.run([*script(_WITH_PEAK), str(where), *args], capture_output=True,
                            text=True, env=env, timeout=600)  # fmt: skip
    return result, int(where.read_text())


def test_a_snapshot_over_the_size_limit_is_refused_unread(recorded, tmp_path):
    """The limit is injected (RESOURCE_TRACKER_MAX_SNAPSHOT_MIB=4): a valid 48 MiB snapshot
    is refused in one line without being read (the peak RSS of the refusing process is that
    of the same command on a small snapshot, ±16 MiB), and loads with a higher limit."""
    big = _write(tmp_path, _padded(recorded, 48), "big.json")
    small = _write(tmp_path, recorded, "small.json")
    capped = env_with(RESOURCE_TRACKER_MAX_SNAPSHOT_MIB=4)
    refused, rss_big = _peak_kib(tmp_path, ["stats", big], capped)
    assert_one_line_error(refused, "snapshot too large (48.0 MiB, the limit is 4 MiB")
    assert "RESOURCE_TRACKER_MAX_SNAPSHOT_MIB" in refused.stderr
    shown, rss_small = _peak_kib(tmp_path, ["stats", small], capped)
    assert shown.returncode == 0, shown.stderr
    assert rss_big <= rss_small + 16 * 1024, (rss_big, rss_small)
    loaded = run_cli("stats", big, env=env_with(RESOURCE_TRACKER_MAX_SNAPSHOT_MIB=64), timeout=600)
    assert loaded.returncode == 0, loaded.stderr  # (a hang guard: 48 MiB parsed on a busy machine)
    with pytest.raises(ValueError, match="snapshot too large"):  # loads() has the same limit
        os.environ["RESOURCE_TRACKER_MAX_SNAPSHOT_MIB"] = "4"
        try:
            ResourceTracker.loads(open(big).read())
        finally:
            del os.environ["RESOURCE_TRACKER_MAX_SNAPSHOT_MIB"]


def test_an_invalid_size_limit_is_one_line(recorded, tmp_path):
    path = _write(tmp_path, recorded)
    result = run_cli("stats", path, env=env_with(RESOURCE_TRACKER_MAX_SNAPSHOT_MIB="lots"))
    assert_one_line_error(result, "RESOURCE_TRACKER_MAX_SNAPSHOT_MIB")


def test_a_snapshot_with_a_utf8_bom_loads(recorded, tmp_path):
    plain = _write(tmp_path, recorded, "plain.json")
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + recorded.encode())
    with_bom, without = run_cli("stats", str(bom)), run_cli("stats", plain)
    assert with_bom.returncode == 0, with_bom.stderr
    assert with_bom.stdout.replace(str(bom), "X") == without.stdout.replace(plain, "X")
    for command in (["stats", "--json"], ["recommend"]):
        assert run_cli(*command, str(bom)).returncode in (0, 1)
    tracker = ResourceTracker.loads("\ufeff" + recorded)
    assert tracker.stats() == ResourceTracker.loads(b"\xef\xbb\xbf" + recorded.encode()).stats()


def test_lone_surrogates_of_a_snapshot_reach_the_report_as_replacements(recorded, tmp_path):
    """A label, a job and a command holding lone surrogates (a name that is not UTF-8, as
    Python decodes it; in JSON "\\udcff"): `report` writes its page with U+FFFD in their place
    (the old one stopped: "cannot render ...: surrogates not allowed", no page)."""
    snap = json.loads(recorded)
    snap.update(label="night\udcffly", job="etl\udcfe", command="python \udcffjob.py")
    path = _write(tmp_path, snap)
    page = tmp_path / "r.html"
    done = run_cli("report", "-o", str(page), path)
    assert done.returncode == 0, done.stderr
    html = page.read_bytes().decode("utf-8")  # strict: no surrogate written
    assert "night\ufffdly" in html and "\\udcff" not in html and "\\udcfe" not in html
