"""Counts of one read in the singular where a person reads them: the catalog's "no server"
sentence, the data-quality notes of the report and the CLI."""

from __future__ import annotations

import pytest

from resource_tracker import catalog
from resource_tracker._run_data import data_quality_notes


def test_no_server_sentence_of_one_vcpu_and_one_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("RESOURCE_TRACKER_KEEPER_URL", "off")
    monkeypatch.setenv("RESOURCE_TRACKER_EMBEDDED_CATALOG", "on")
    monkeypatch.setenv("RESOURCE_TRACKER_CACHE_DIR", str(tmp_path))
    with pytest.raises(catalog.NoMatchingServerError) as one:
        catalog.recommend_server({"cpu": 1, "memory": 512, "gpu": 1}, vendor="aws", max_price=0.0)
    assert "has 1 vCPU, 512 MiB memory, 1 GPU" in str(one.value), str(one.value)
    with pytest.raises(catalog.NoMatchingServerError) as two:
        catalog.recommend_server({"cpu": 2, "memory": 512, "gpu": 2}, vendor="aws", max_price=0.0)
    assert "has 2 vCPUs, 512 MiB memory, 2 GPUs" in str(two.value), str(two.value)


def test_data_quality_notes_of_one_sample_and_one_send():
    stats = {
        "data_quality": {"samples_dropped": 1, "incomplete_columns": {}},
        "export": {
            "targets": {
                "pushgateway": {
                    "sent": 3,
                    "failures": 1,
                    "dropped_points": 0,
                    "dropped_rows": 1,
                    "last_error": None,
                    "final": "failed",
                }
            },
            "rows_dropped": 1,
        },
    }
    notes = data_quality_notes(stats)
    assert notes[0].startswith("1 sample was dropped because memory ran out"), notes
    assert "export to pushgateway: 1 sample dropped, 1 failed send, final push failed" in notes
    stats["data_quality"]["samples_dropped"] = 7
    assert data_quality_notes(stats)[0].startswith("7 samples were dropped"), notes
