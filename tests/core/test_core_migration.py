"""Code written for the original package (0.4 and 0.5 series) keeps running unchanged.

Each test is a snippet as a user of those versions wrote it, run against this package:
real trackers on this process, real files, a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import os
import pickle
import threading
import time

import pytest

from resource_tracker import ResourceTracker, TinyDataFrame

# -- tracker = ResourceTracker(); tracker.start() ------------------------------------------


def test_start_after_autostart_is_a_no_op_and_a_second_start_is_an_error():
    """`tracker = ResourceTracker(); tracker.start()` as the 0.4 docs showed it: the start()
    of a tracker that already started itself does nothing; starting it again is an error."""
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    try:
        started = tracker.start_time
        tracker.start()  # the 0.4 habit
        assert tracker.running and tracker.start_time == started
        assert tracker.wait_for_samples(2, timeout=10)
        with pytest.raises(RuntimeError, match="already running"):
            tracker.start()
    finally:
        tracker.stop()
    assert tracker.n_samples >= 2 and not tracker.running


def test_explicit_start_of_a_tracker_made_with_autostart_false_still_starts_once():
    tracker = ResourceTracker(interval=0.05, autostart=False, discover_cloud=False)
    assert tracker.status == "new"
    tracker.start()
    try:
        assert tracker.running
        with pytest.raises(RuntimeError):
            tracker.start()
    finally:
        tracker.stop()


# -- TinyDataFrame ----------------------------------------------------------------------------


def test_ints_and_strings_are_kept_as_given():
    df = TinyDataFrame({"i": [1, 2], "name": ["a", "b"], "x": [0.5, 1.5]})
    assert df["i"] == [1, 2] and type(df["i"][0]) is int
    assert df["name"] == ["a", "b"]
    assert df[1] == {"i": 2, "name": "b", "x": 1.5} and type(df[1]["i"]) is int
    assert type(pickle.loads(pickle.dumps(df))["i"][0]) is int


def test_set_a_column_and_rename():
    """`df["x"] = [...]` adds or replaces a column; `rename({...})` renames in place and
    returns the frame (as the original package's did); an unknown name is a KeyError."""
    df = TinyDataFrame({"timestamp": [1.0, 2.0], "memory": [1024.0, 2048.0]})
    df["memory_mib"] = [m / 1024 for m in df["memory"]]
    df["host"] = "node-1"  # one value for every row
    assert df.columns == ["timestamp", "memory", "memory_mib", "host"]
    assert df["memory_mib"] == [1.0, 2.0] and df["host"] == ["node-1", "node-1"]
    with pytest.raises(ValueError, match="3 values, the frame has 2 rows"):
        df["bad"] = [1, 2, 3]
    copy = TinyDataFrame(df)
    assert df.rename({"memory": "memory_kib"}) is df
    assert df.columns == ["timestamp", "memory_kib", "memory_mib", "host"]
    assert copy.columns == ["timestamp", "memory", "memory_mib", "host"]  # a copy: unchanged
    with pytest.raises(KeyError, match="no such column"):
        df.rename({"host": "node", "no such column": "ignored"})
    assert "host" in df.columns  # nothing renamed


def test_to_csv_quotes_strings_and_round_trips_through_the_csv_constructor(tmp_path):
    df = TinyDataFrame(
        {
            "step": ["train", 'say "hi", then\nleave', "7"],  # "7" is a string, not a number
            "pid": [101, 102, 103],
            "cpu_usage": [0.1, 1.0000000000000002, 2.5],
            "note": [None, "", "x"],
        }
    )
    text = df.to_csv()
    assert text.splitlines()[0] == '"step","pid","cpu_usage","note"'
    assert df.to_csv(quote_strings=False).splitlines()[0] == "step,pid,cpu_usage,note"
    assert text.splitlines()[1] == '"train",101,0.1,'
    path = tmp_path / "frame.csv"
    assert df.to_csv(str(path)) is None
    back = TinyDataFrame(csv_file_path=str(path))
    assert back == df
    assert back["step"][2] == "7" and type(back["pid"][0]) is int
    assert back["cpu_usage"][1] == 1.0000000000000002  # floats are lossless


def test_csv_written_by_other_tools_reads_with_types(tmp_path):
    """A CSV that quotes nothing (e.g. written by a spreadsheet or the tracker's CLI)."""
    path = tmp_path / "plain.csv"
    path.write_text("timestamp,pid,label\r\n1700000000.5,42,idle\r\n1700000001.5,42,busy\r\n")
    df = TinyDataFrame(csv_file_path=path)
    assert df.to_columns() == {
        "timestamp": [1700000000.5, 1700000001.5],
        "pid": [42, 42],
        "label": ["idle", "busy"],
    }
    path.write_text("a,b\n1,2\n3\n")
    with pytest.raises(RuntimeError, match="row 3 has 1 fields, the header has 2"):
        TinyDataFrame(csv_file_path=path)


def test_tracker_metrics_saved_as_csv_read_back_equal(tmp_path):
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(3, timeout=10)
    tracker.stop()
    path = tmp_path / "process.csv"
    tracker.process_metrics.to_csv(str(path))
    assert TinyDataFrame(csv_file_path=path) == tracker.process_metrics


@pytest.fixture
def http_dir(tmp_path):
    """A real HTTP server on 127.0.0.1 serving tmp_path."""
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_csv_from_a_url(http_dir):
    folder, base = http_dir
    TinyDataFrame({"a": [1, 2], "b": ["x", "y"]}).to_csv(str(folder / "data.csv"))
    df = TinyDataFrame(csv_file_path=f"{base}/data.csv")
    assert df.to_columns() == {"a": [1, 2], "b": ["x", "y"]}
    with pytest.raises(RuntimeError, match="cannot read CSV from .*missing.csv"):
        TinyDataFrame(csv_file_path=f"{base}/missing.csv")


def test_an_empty_frame_reads_well():
    assert str(TinyDataFrame()) == "TinyDataFrame with 0 rows and 0 columns:\nEmpty dataframe"
    empty = TinyDataFrame({"timestamp": [], "memory": []})
    assert str(empty) == "TinyDataFrame with 0 rows and 2 columns:\nEmpty dataframe"
    assert repr(empty) == "TinyDataFrame with 0 rows and 2 columns. First row as a dict: {}"
    assert "Empty dataframe" in empty._repr_html_()
    assert TinyDataFrame().to_csv() == ""
    assert empty.to_csv() == '"timestamp","memory"\n'
    assert str(TinyDataFrame({"a": [1]})).startswith("TinyDataFrame with 1 rows and 1 columns:")


# -- get_server_info / get_cloud_info ------------------------------------------------------


def test_server_and_cloud_info_functions_importable_from_the_package():
    from resource_tracker import get_cloud_info, get_server_info

    info = get_server_info()
    assert info["vcpus"] == os.cpu_count()
    assert info["memory_mib"] == info["memory_mb"] > 0
    assert info["gpu_memory_mib"] == info["gpu_memory_mb"]
    began = time.perf_counter()
    cloud = get_cloud_info()
    assert time.perf_counter() - began < 5  # no cloud evidence here: answered locally
    assert set(cloud) == {"vendor", "instance_type", "region", "discovery_time"}
    assert all(isinstance(cloud[k], str) for k in ("vendor", "instance_type", "region"))
    assert isinstance(cloud["discovery_time"], float)


def test_tracker_server_info_has_both_names():
    tracker = ResourceTracker(autostart=False, discover_cloud=False)
    info = tracker.server_info
    assert info["memory_mib"] == info["memory_mb"]
    assert info["gpu_memory_mib"] == info["gpu_memory_mb"]


# -- report(...) with a status and the integration's name --------------------------------


def test_report_accepts_a_failed_status_and_the_integration_name():
    tracker = ResourceTracker(interval=0.05, discover_cloud=False)
    tracker.wait_for_samples(2, timeout=10)
    tracker.stop()
    plain = tracker.report()
    assert "rt-status-finished" in plain and "Integration" not in plain
    failed = tracker.report(status="failed", integration="Metaflow")
    assert "rt-status-failed" in failed
    assert "The step failed after" in failed  # Metaflow runs steps
    assert "<th>Integration</th><td>Metaflow</td>" in failed.replace("\n", "")
    assert "rt-status-failed" in tracker.report(status_failed=True)
    with pytest.raises(ValueError, match="status must be one of"):
        tracker.report(status="exploded")
