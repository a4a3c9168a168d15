"""TinyDataFrame: access, printing like the seeds, CSV, pickling, pandas."""

from __future__ import annotations

import csv
import io
import pickle

import pytest

from resource_tracker import TinyDataFrame


@pytest.fixture
def df():
    return TinyDataFrame(
        {"timestamp": [1756711946.0, 1756711947.0, 1756711948.0], "cpu_usage": [1.0303, 0.87, 2.5]}
    )


def test_access_by_column_row_slice_and_list(df):
    assert len(df) == 3 and df.columns == ["timestamp", "cpu_usage"]
    assert df["cpu_usage"] == [1.0303, 0.87, 2.5]
    assert df[0] == {"timestamp": 1756711946.0, "cpu_usage": 1.0303}
    assert df[-1]["cpu_usage"] == 2.5
    assert df[1:]["cpu_usage"] == [0.87, 2.5]
    assert df[["cpu_usage"]].columns == ["cpu_usage"]
    assert len(df.head(2)) == 2 and df.tail(1)[0]["cpu_usage"] == 2.5
    assert df.to_columns() == {"timestamp": df["timestamp"], "cpu_usage": df["cpu_usage"]}
    assert df.to_dict() == [df[0], df[1], df[2]]  # rows, as the original package gave them
    with pytest.raises(KeyError, match="no column 'nope'"):
        df["nope"]
    with pytest.raises(IndexError):
        df[3]


def test_rows_input_and_unequal_columns():
    rows = TinyDataFrame([{"a": 1, "b": 2}, {"a": 3, "b": 4}])
    assert rows["a"] == [1.0, 3.0]
    with pytest.raises(ValueError, match="equally long"):
        TinyDataFrame({"a": [1], "b": [1, 2]})


def test_prints_as_a_table_like_the_seeds(df):
    text = str(df)
    lines = text.splitlines()
    assert lines[0] == "TinyDataFrame with 3 rows and 2 columns:"
    assert lines[1].split(" | ") == ["timestamp   ", "cpu_usage"]
    assert set(lines[2]) <= {"-", "+"}
    assert lines[3].endswith("1.0303") and "1756711946.0" in lines[3]
    big = TinyDataFrame({"x": list(range(50))})
    assert str(big).splitlines()[-1] == "..."
    assert repr(df).startswith("TinyDataFrame with 3 rows and 2 columns. First row as a dict: {")
    html = TinyDataFrame({"<b>": [1.0]})._repr_html_()
    assert "<table>" in html and "&lt;b&gt;" in html


def test_csv_round_trip_is_lossless(df, tmp_path):
    text = df.to_csv()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [float(r["cpu_usage"]) for r in rows] == df["cpu_usage"]
    path = tmp_path / "df.csv"
    df.to_csv(str(path))
    assert path.read_text() == text


def test_pickles_compactly(df):
    again = pickle.loads(pickle.dumps(df))
    assert again == df
    big = TinyDataFrame({"x": [float(i) for i in range(10000)]})
    assert len(pickle.dumps(big)) < 10000 * 8 + 500  # float64 arrays, not Python floats


def test_to_pandas(df):
    # pandas is a test extra (make test installs it); to_pandas() itself imports it lazily
    frame = df.to_pandas()
    assert list(frame.columns) == df.columns and frame["cpu_usage"].tolist() == df["cpu_usage"]
