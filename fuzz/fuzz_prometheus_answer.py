"""atheris target: the reader of Prometheus's answers (resource_tracker/dashboard/
_prometheus.py, ``dashboard --prometheus``): a server's query_range answer is outside input.

Promises, for any bytes as the answer to every query of a load:
- ``answer_values`` gives {labels: number} (no NaN; label names and values text) or raises
  ValueError saying what the answer is, never anything else (RecursionError on a deep answer
  among what it must not raise);
- every run of it becomes a record or a skipped line (``_record``: ValueError), and the fleet
  of the records gives strict JSON (``--json``) and the page (the old page writer raised on
  1.797e308), with no lone surrogate in either.

    python3 fuzz/fuzz_prometheus_answer.py [libFuzzer flags] CORPUS_DIR
"""

from __future__ import annotations

import json
import math

from resource_tracker.cli.dashboard import fleet_json
from resource_tracker.dashboard import _prometheus
from resource_tracker.dashboard._fleet import build_fleet
from resource_tracker.dashboard._page import render_dashboard

BASE = "http://127.0.0.1:9"


def _well_formed(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_one_input(data: bytes) -> None:
    """Raises (what the reader or the page raised, or AssertionError) when a promise is
    broken."""
    try:
        values = _prometheus.answer_values(data, BASE)
    except ValueError:
        return
    for key, value in values.items():
        assert isinstance(value, float) and not math.isnan(value), value
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in key), key
    figures = {name: values for name in _prometheus._figures()}
    records, skipped = [], []
    for key, end in values.items():
        try:
            records.append(_prometheus._record(dict(key), end, figures, ["instance"]))
        except ValueError as exc:
            skipped.append(str(exc))
    fleet = build_fleet(records, None, skipped)
    assert _well_formed(json.dumps(fleet_json(fleet), allow_nan=False, ensure_ascii=False))
    assert _well_formed(render_dashboard(fleet, [f"Prometheus {BASE}"], now=0.0))


if __name__ == "__main__":
    from atheris_main import fuzz  # fuzz/, this script's folder, is on sys.path

    fuzz(test_one_input)
