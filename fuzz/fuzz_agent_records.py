"""atheris target: the reader of ``run --code``'s agents' folder (resource_tracker/cli/
code_records.py), whose files the command's processes write: outside input.

Promises, for any bytes written as an agent's ``<pid>.json``:
- ``read_records`` reads it or skips it with one printable line, never raises;
- a record it reads, put into a snapshot as the run's agent record, loads back
  (``ResourceTracker.loads``: the same checks) and the code views (``code_profile`` by
  function and by line, ``code_timeline``, ``code_peak``) work on it.

Half of the inputs that are a JSON object are also mutated structurally (values at random key
paths replaced by values of other types, long stack chains, huge and subnormal numbers) so
that the fuzzer gets past the JSON syntax.

    python3 fuzz/fuzz_agent_records.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import zlib

from resource_tracker import ResourceTracker
from resource_tracker._text import printable
from resource_tracker.cli.code_records import read_records

ODD_VALUES = [None, 0, -1, 1.5, 1e308, 5e-324, "", "x", [], {}, True, [1, "a"], [[-1, 0]] * 3,
              [[i - 1, 0] for i in range(400)], [[0, 0, 0, 1]], "\u202e\udcff", 10**30,
              {"timestamp": [1.0], "memory": [1.0]}]  # fmt: skip
_STATE: dict = {}


def _folder() -> str:
    """The agents' folder of this process (removed at exit)."""
    if "folder" not in _STATE:
        import atexit

        _STATE["folder"] = tempfile.mkdtemp(prefix="fuzz-agent-records-")
        atexit.register(shutil.rmtree, _STATE["folder"], True)
    return _STATE["folder"]


def _host() -> dict:
    """The snapshot of a short real run of this process (made once): the run the agent
    records join."""
    if "host" not in _STATE:
        tracker = ResourceTracker(interval=0.05, discover_server=False, discover_cloud=False)
        tracker.wait_for_samples(2, 10)
        tracker.stop()
        _STATE["host"] = json.loads(tracker.dumps())
    return _STATE["host"]


def _mutate(obj: dict, rng: random.Random) -> dict:
    """obj with one to three values (top level or one below) replaced or deleted."""
    paths = [(k,) for k in obj] + [
        (k, j) for k, v in obj.items() if isinstance(v, dict) for j in v
    ]  # fmt: skip
    for path in rng.sample(paths, min(len(paths), rng.randint(1, 3))):
        parent = obj if len(path) == 1 else obj.get(path[0])
        if not isinstance(parent, dict) or path[-1] not in parent:
            continue
        if rng.random() < 0.85:
            parent[path[-1]] = rng.choice(ODD_VALUES)
        else:
            del parent[path[-1]]
    return obj


def _check(data: bytes) -> None:
    folder = _folder()
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    with open(os.path.join(folder, "1.json"), "wb") as f:
        f.write(data)
    records, skipped = read_records(folder)
    assert len(records) + len(skipped) == 1, (records, skipped)
    for line in skipped:
        assert line == printable(line, 300) and "\n" not in line, line
    if not records:
        return
    empty = {"version": 1, "status": "recorded", "note": None, "frames": [], "stacks": [],
             "threads": [], "samples": []}  # fmt: skip
    snapshot = dict(_host(), code_profile=dict(empty, processes=records))
    tracker = ResourceTracker.loads(json.dumps(snapshot))  # a ValueError: a broken promise
    tracker.code_profile()
    tracker.code_profile("line", user_code=True)
    tracker.code_timeline()
    tracker.code_peak()


def test_one_input(data: bytes) -> None:
    """Raises (what the reader or a view raised, or AssertionError) when a promise is
    broken."""
    _check(data)
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return
    if isinstance(obj, dict):
        rng = random.Random(zlib.crc32(data))
        _check(json.dumps(_mutate(obj, rng)).encode("utf-8", "surrogatepass"))


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
