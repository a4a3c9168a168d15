"""atheris target: snapshot loading, ResourceTracker.loads() (dumps() text from a file or a
Metaflow artifact is outside input).

Promise: loads() returns a stopped tracker or raises ValueError, for any bytes; a loaded
tracker's snapshot() works. Half of the inputs are mutated structurally: when the input is a
JSON object, values at random keys (top level and inside the metric tables) are replaced by
values of other types before loading, so the fuzzer gets past the JSON syntax.

    python3 fuzz/fuzz_snapshot.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import json
import random
import zlib

from resource_tracker import ResourceTracker

ODD_VALUES = [None, 0, -1, 1.5, 1e308, "", "x", [], {}, True, [1, "a"], {"a": 1}, "AAAA", "@@"]


def _mutate(obj, rng, depth=0):
    """obj with some values replaced by values of other types."""
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            roll = rng.random()
            if roll < 0.15:
                out[key] = rng.choice(ODD_VALUES)
            elif roll < 0.2:
                continue
            else:
                out[key] = _mutate(value, rng, depth + 1) if depth < 4 else value
        return out
    if isinstance(obj, list) and obj and rng.random() < 0.2:
        return obj[: rng.randrange(len(obj))]
    return obj


def _check(text):
    try:
        tracker = ResourceTracker.loads(text)
    except ValueError:
        return
    assert tracker.status in ("finished", "running", None) or isinstance(tracker.status, str)
    tracker.snapshot()


def test_one_input(data: bytes) -> None:
    """Raises (what loads() raised, or AssertionError) when the promise is broken."""
    _check(data)
    try:
        obj = json.loads(data)
    except ValueError:
        return
    if isinstance(obj, dict):
        rng = random.Random(zlib.crc32(data))
        _check(json.dumps(_mutate(obj, rng)))


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
