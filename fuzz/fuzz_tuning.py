"""atheris target: the tuning rule (resource_tracker/tuning.py) on records from outside: the
records a tuned step reads back from the datastore and the artifacts of earlier runs (issue
41: a number of 400 digits or ``"limits": "16Gi"`` made tuning raise).

Promise, for any input: ``tune_resources`` (and ``next_tuning``) return, never raise; the
tuned values are whole numbers between 1 and the largest machine of the catalog (and the
``max_*`` guardrail); the note is printable; a corrupt record next to good ones leaves the
good ones tuned. The input is a JSON document (records, one record, or anything), and its
bytes also drive a structural mutation of real-shaped records (1 to 3 values at random key
paths replaced by other types, 401-digit integers, NaN, escape sequences).

    python3 fuzz/fuzz_tuning.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import copy
import json
import random
import re
import zlib

from resource_tracker.tuning import (
    CPU_STEPS,
    LARGEST_MACHINE,
    next_tuning,
    run_record,
    tune_resources,
)

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m"
ODD_VALUES = [None, 0, -1, 1.5, 1e308, "", "16Gi", [], {}, True, [1, "a"], {"memory": 1},
              ESCAPES, 10**401, -(10**30), float("nan"), float("inf"), "0", {"cpu": "many"},
              "killed", "running", 2**64]  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
ASKED = {"cpu": 2, "memory": 4096}
BOUNDS = {"max_memory": 65536}


def seed_records():
    """Records as the decorator keeps them: a run that went through, a killed one."""
    stats = {
        "timestamp": {"duration": 60.0},
        "process_memory": {"max": 900 * 1024.0},
        "process_cpu_usage": {"mean": 0.9, "p90": 1.1},
        "cgroup": {"memory_limit_mib": 2048, "cpu_limit_cores": 1, "cpu_periods": 600,
                   "cpu_throttled_periods": 300, "cpu_throttled_seconds": 30, "oom_kills": 0},
    }  # fmt: skip
    ok = dict(run_record(stats, ASKED), run="2", attempt=0, final=True, code="abc")
    killed = dict(run_record(stats, ASKED, 8, "running"), run="3", attempt=0, status="killed")
    return [killed, ok]


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(value, prefix + (i,))


def _mutated(records, rng):
    out = copy.deepcopy(records)
    paths = list(_paths(out))
    for _ in range(rng.randint(1, 3)):
        path, node = rng.choice(paths), out
        try:  # an earlier mutation may have replaced a node on the path
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = rng.choice(ODD_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    return out


def _check(tuning, bounded):
    for key, value in tuning.resources.items():
        if key == "cpu":  # whole vCPUs or quarters of a core (CPU_STEPS)
            assert value >= 0.25 and float(value * 4).is_integer(), tuning
        else:
            assert isinstance(value, int) and value >= 1, tuning
        assert value <= LARGEST_MACHINE.get(key, 64), tuning
    if bounded and "memory" in tuning.resources:
        assert tuning.resources["memory"] <= BOUNDS["max_memory"], tuning
    assert not _CONTROL.search(tuning.note + "".join(tuning.changes)), repr(tuning.note)


def test_one_input(data: bytes) -> None:
    """Raises (what tuning raised, or AssertionError) when the promise is broken."""
    try:
        given = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        given = None
    rng = random.Random(zlib.crc32(data))
    good = seed_records()
    bad = _mutated(good, rng)
    given_runs = given if isinstance(given, list) else [given]
    for runs, asked, bounds in (
        (given_runs, given, given),
        (bad, ASKED, BOUNDS),
        (given_runs + good, ASKED, BOUNDS),
        (bad + good, ASKED, None),
    ):
        _check(tune_resources(runs, asked, bounds), bounds is BOUNDS)
    # one corrupt record beside good ones: the good ones are still tuned
    mixed = tune_resources([bad[0], given] + good, ASKED, BOUNDS)
    assert mixed.resources.get("memory"), mixed
    _check(tune_resources(good, ASKED, BOUNDS, cpu_step=given), True)
    _check(tune_resources(bad + good, ASKED, BOUNDS, cpu_step=CPU_STEPS["fractional"]), True)
    extra = {"tuning_input": {"records": bad, "asked": given, "bounds": given, "code": given,
                              "cpu_step": given}}  # fmt: skip
    upcoming = next_tuning(extra, given if isinstance(given, dict) else {}, given)
    if upcoming is not None:
        _check(upcoming, False)


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
