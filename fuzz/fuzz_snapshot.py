"""atheris target: snapshot loading, ResourceTracker.loads(), and the commands that read a
snapshot (dumps() text from a file or a Metaflow artifact is outside input).

Promises, for any bytes:
- loads() returns a stopped tracker or raises ValueError; a loaded tracker's snapshot() works;
- `stats`, `stats --json`, `recommend` and `report` (the real command-line entry point,
  resource_tracker.cli.main, on the bytes written to a file) return 0, 1 or 2, never raise;
  on 2 stderr is one line 'resource-tracker...'; an unloadable input is 2 for all four;
- nothing they print holds a control character but tab and newline (no escape sequence of
  the snapshot reaches the terminal), and `stats --json` prints strict JSON (no NaN).

Half of the inputs are mutated structurally: when the input is a JSON object, values at
random keys (top level and inside the metric tables) are replaced by values of other types
(escape sequences, 401-digit integers, NaN among them) before loading, so the fuzzer gets
past the JSON syntax. The commands run offline: no Keeper, no cloud metadata (the embedded
catalog answers `recommend`).

    python3 fuzz/fuzz_snapshot.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import tempfile
import zlib

from resource_tracker import ResourceTracker

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m\rback"
ODD_VALUES = [None, 0, -1, 1.5, 1e308, "", "x", [], {}, True, [1, "a"], {"a": 1}, "AAAA", "@@",
              ESCAPES, 10**401, -(10**30), float("nan"), float("inf"), "\ufeff", "0", [ESCAPES],
              {"vcpus": "many"}]  # fmt: skip

COMMANDS = (["stats"], ["stats", "--json"], ["recommend"], ["report", "-o", "{dir}/r.html"])
OFFLINE = {
    "RESOURCE_TRACKER_KEEPER_URL": "off",
    "RESOURCE_TRACKER_METADATA_URL": "http://127.0.0.1:9",
    "RESOURCE_TRACKER_DISCOVER_CLOUD": "0",
    "RESOURCE_TRACKER_EXPORT": "",
}
# what a terminal must never see: C0 controls but tab and newline, DEL, C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_WORKDIR = None


def _paths(obj, prefix=(), depth=0):
    """The key paths of obj's dicts (down to depth 4)."""
    if isinstance(obj, dict) and depth < 5:
        for key, value in obj.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,), depth + 1)


def _mutate(obj, rng):
    """obj (a dict) with one to three values at random key paths replaced by values of other
    types, deleted, or a list cut short: a few changes at a time, so that one value the loader
    refuses does not hide what another would do to the commands."""
    paths = list(_paths(obj))
    for path in rng.sample(paths, min(len(paths), rng.randint(1, 3))):
        parent = obj
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or path[-1] not in parent:
            continue
        roll = rng.random()
        if roll < 0.8:
            parent[path[-1]] = rng.choice(ODD_VALUES)
        elif roll < 0.9:
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], list) and parent[path[-1]]:
            parent[path[-1]] = parent[path[-1]][: rng.randrange(len(parent[path[-1]]))]
    return obj


def _workdir():
    """A temporary directory of this process (removed at exit) for the snapshot file."""
    global _WORKDIR
    if _WORKDIR is None:
        import atexit

        _WORKDIR = tempfile.mkdtemp(prefix="fuzz-snapshot-")
        atexit.register(shutil.rmtree, _WORKDIR, True)
    return _WORKDIR


@contextlib.contextmanager
def _offline():
    """The environment of OFFLINE for the commands, restored afterwards."""
    saved = {name: os.environ.get(name) for name in OFFLINE}
    os.environ.update(OFFLINE)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _command(argv):
    """(status, stdout, stderr) of resource_tracker.cli.main(argv), run in this process."""
    from resource_tracker.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _strict_json(text):
    def refuse(name):
        raise AssertionError(f"stats --json printed {name}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


def _check_commands(data, loaded):
    """The four commands on data written to a file keep the promises of the docstring."""
    path = os.path.join(_workdir(), "snap.json")
    with open(path, "wb") as f:
        f.write(data)
    with _offline():
        for cmd in COMMANDS:
            argv = [a.format(dir=_workdir()) for a in cmd] + [path]
            status, out, err = _command(argv)
            assert status in (0, 1, 2), (argv, status, err)
            assert not _CONTROL.search(out + err), (argv, out[-400:], err[-400:])
            if status == 2:
                lines = err.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("resource-tracker"), (argv, err)
            if not loaded:
                assert status == 2 and "cannot read" in err, (argv, status, err)
            elif cmd == ["stats", "--json"] and status == 0:
                assert isinstance(_strict_json(out), dict)


def _check(text):
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        tracker = ResourceTracker.loads(text)
    except ValueError:
        _check_commands(data, loaded=False)
        return
    assert tracker.status in ("finished", "running", None) or isinstance(tracker.status, str)
    tracker.snapshot()
    _check_commands(data, loaded=True)


def test_one_input(data: bytes) -> None:
    """Raises (what loads() or a command raised, or AssertionError) when a promise is
    broken."""
    _check(data)
    try:
        obj = json.loads(data)
    except ValueError:
        return
    if isinstance(obj, dict):
        rng = random.Random(zlib.crc32(data))
        text = json.dumps(_mutate(obj, rng))
        _check("\ufeff" + text if rng.random() < 0.1 else text)


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
