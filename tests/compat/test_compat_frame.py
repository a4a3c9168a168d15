"""TinyDataFrame as code written for the original package (0.4/0.5) uses it.

Each test is a snippet written against the original's documented API (its docstrings and
the seeds), run on this package: the silent differences of issue 28 are asserted the
original's way. CSV over a real HTTP server on 127.0.0.1; files in tmp_path.
"""

from __future__ import annotations

import http.server
import inspect
import threading
from statistics import mean

import pytest

from resource_tracker import TinyDataFrame
from resource_tracker import tiny_data_frame as tdf
from resource_tracker.tiny_data_frame import StatSpec


@pytest.fixture
def df():
    return TinyDataFrame(
        {"step": ["load", 'say "hi", then leave'], "pid": [7, 8], "cpu_usage": [0.5, 1.25]}
    )


def test_iterating_yields_one_dict_per_row(df):
    rows = [row for row in df]
    assert rows == [
        {"step": "load", "pid": 7, "cpu_usage": 0.5},
        {"step": 'say "hi", then leave', "pid": 8, "cpu_usage": 1.25},
    ]
    assert [r["pid"] for r in df] == df["pid"]
    assert list(df) == rows and len(list(TinyDataFrame())) == 0


def test_to_dict_is_the_list_of_row_dicts(df):
    assert df.to_dict() == [df[0], df[1]]
    assert TinyDataFrame(df.to_dict()) == df  # rows in, rows out
    assert df.to_columns() == {col: df[col] for col in df.columns}


def test_rename_renames_in_place_returns_the_frame_and_refuses_unknown_names(df):
    df.rename({"cpu_usage": "cpu"})  # without assignment, as 0.4/0.5 code does
    assert df.columns == ["step", "pid", "cpu"]
    assert df.rename({"pid": "process"}).rename({"process": "p"}) is df  # chaining
    assert df.columns == ["step", "p", "cpu"]
    with pytest.raises(KeyError, match="no column 'nope'"):
        df.rename({"step": "name", "nope": "x"})
    assert df.columns == ["step", "p", "cpu"]  # nothing renamed


def test_to_csv_quotes_the_header_and_strings_unless_told_not_to(df, tmp_path):
    assert df.to_csv().splitlines() == [
        '"step","pid","cpu_usage"',
        '"load",7,0.5',
        '"say ""hi"", then leave",8,1.25',
    ]
    assert df.to_csv(quote_strings=False).splitlines() == [
        "step,pid,cpu_usage",
        "load,7,0.5",
        '"say ""hi"", then leave",8,1.25',  # a comma and quotes: quoted all the same
    ]
    path = tmp_path / "frame.csv"
    assert df.to_csv(csv_file_path=str(path)) is None  # the original's keyword
    assert TinyDataFrame(csv_file_path=str(path)) == df
    path.write_text(df.to_csv(quote_strings=False))
    assert TinyDataFrame(csv_file_path=str(path)) == df


def test_stats_with_stat_specs(df):
    out = df.stats(
        [
            StatSpec("cpu_usage", mean),
            StatSpec("cpu_usage", max, round=1),
            StatSpec(column="pid", agg=lambda v: v[-1] - v[0], agg_name="span"),
        ]
    )
    assert out == {"cpu_usage": {"mean": 0.875, "max": 1.2}, "pid": {"span": 1}}
    assert StatSpec("a", max) == ("a", max, None, None)  # a named tuple, as documented
    with pytest.raises(KeyError, match="no column 'nope'"):
        df.stats([StatSpec("nope", max)])


def test_an_empty_frame_prints_the_original_text():
    assert str(TinyDataFrame()) == "TinyDataFrame with 0 rows and 0 columns:\nEmpty dataframe"
    empty = TinyDataFrame({"timestamp": [], "memory": []})
    assert str(empty) == "TinyDataFrame with 0 rows and 2 columns:\nEmpty dataframe"
    assert repr(empty) == "TinyDataFrame with 0 rows and 2 columns. First row as a dict: {}"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a,b\n1,2,3\n", "row 2 has 3 fields, the header has 2"),
        ('a,b\n"x,1\n', "ends inside a quoted field"),
        ("a,a\n1,2\n", "names a column twice"),
    ],
)
def test_a_malformed_csv_raises_runtime_error_saying_what_is_wrong(tmp_path, text, problem):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(RuntimeError, match=f"cannot read CSV from .*bad.csv.*{problem}"):
        TinyDataFrame(csv_file_path=str(path))


def test_a_missing_csv_file_raises_runtime_error(tmp_path):
    with pytest.raises(RuntimeError, match="No such file"):
        TinyDataFrame(csv_file_path=str(tmp_path / "missing.csv"))


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503 to the first `failures` requests, then the CSV."""

    failures = 0
    seen = 0

    def do_GET(self):
        type(self).seen += 1
        if type(self).seen <= type(self).failures:
            self.send_error(503, "busy")
            return
        body = b'"a","b"\n1,"x"\n2,"y"\n'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/data.csv"
    server.shutdown()
    server.server_close()


def test_retries_read_a_url_again_with_a_doubling_delay(flaky_url, monkeypatch):
    waits = []
    monkeypatch.setattr(tdf, "_retry_sleep", waits.append)  # the waits, counted not slept
    _Flaky.failures, _Flaky.seen = 2, 0
    df = TinyDataFrame(csv_file_path=flaky_url, retries=2, retry_delay=0.5)
    assert df.to_dict() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert waits == [0.5, 1.0] and _Flaky.seen == 3
    _Flaky.failures, _Flaky.seen = 5, 0
    with pytest.raises(RuntimeError, match="after 2 attempts: HTTP Error 503"):
        TinyDataFrame(csv_file_path=flaky_url, retries=1, retry_delay=0)
    assert _Flaky.seen == 2
    for bad in (-1, 10**9, 1.5, True):
        with pytest.raises(ValueError, match="retries must be a whole number from 0 to 100"):
            TinyDataFrame(csv_file_path=flaky_url, retries=bad)
    for bad in (-0.1, float("inf"), float("nan"), "soon"):
        with pytest.raises(ValueError, match="retry_delay must be seconds from 0 to 3600"):
            TinyDataFrame(csv_file_path=flaky_url, retry_delay=bad)


def test_a_0_5_column_name_says_which_column_and_unit_to_read():
    process = TinyDataFrame({"timestamp": [1.0], "memory": [2048.0], "read_bytes": [0.0]})
    with pytest.raises(KeyError, match=r"0\.5 name of 'memory', in KiB \(MiB = KiB / 1024\)"):
        process["memory_mib"]
    with pytest.raises(KeyError, match=r"0\.5 name of 'read_bytes', in B"):
        process[["timestamp", "disk_read_bytes"]]
    with pytest.raises(KeyError, match=r"0\.5 name of 'process_gpu_vram', in MiB"):
        TinyDataFrame({"process_gpu_vram": [0.0]})["process_gpu_vram_mib"]
    with pytest.raises(KeyError) as plain:
        process["nope"]
    assert "0.5" not in str(plain.value)


#: The original's documented signatures (its docs and docstrings), as text.
DOCUMENTED = {
    "__init__": ["self", "data=None", "csv_file_path=None", "retries=0", "retry_delay=0.1"],
    "to_csv": ["self", "csv_file_path=None", "quote_strings=True"],
    "rename": ["self", "columns"],
    "stats": ["self", "specs"],
    "to_dict": ["self"],
    "head": ["self", "n=5"],
    "tail": ["self", "n=5"],
}


def _params(func):
    return [
        p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
        for p in inspect.signature(func).parameters.values()
    ]


def test_methods_take_the_documented_arguments_first():
    """The documented parameters, in order and with their defaults; ours may follow them
    (keyword-only or with defaults), so positional calls mean the same."""
    for name, documented in DOCUMENTED.items():
        got = _params(getattr(TinyDataFrame, name))[: len(documented)]
        assert got == documented, name
    assert list(StatSpec._fields) == ["column", "agg", "agg_name", "round"]
    assert StatSpec._field_defaults == {"agg_name": None, "round": None}
