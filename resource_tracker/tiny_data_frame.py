"""TinyDataFrame: a small column store for the tracker's samples.

Columns of numbers are kept as ``array('d')`` (8 bytes a value); ``df["col"]`` gives a
plain list. It prints as a table (first rows), renders as HTML in notebooks, pickles
compactly (Metaflow artifacts) and converts to pandas when pandas is installed.
"""

from __future__ import annotations

from array import array

_PRINT_ROWS = 10


def _as_column(values):
    """An array('d') when every value is a number, else a list."""
    if isinstance(values, array) and values.typecode == "d":
        return array("d", values)
    values = list(values)
    try:
        return array("d", values)
    except TypeError:
        return values


def _fmt(value):
    """A short text for one table cell (numbers rounded to 4 decimals for display only)."""
    if isinstance(value, float):
        return repr(round(value, 4))
    return str(value)


class TinyDataFrame:
    """A dictionary of equally long columns with table-like access.

    ``TinyDataFrame({"a": [1, 2], "b": [3, 4]})`` or ``TinyDataFrame([{"a": 1, "b": 3}, ...])``.
    """

    __slots__ = ("_data",)

    def __init__(self, data=None, columns=None):
        self._data = {}
        if data is None:
            data = {}
        if isinstance(data, TinyDataFrame):
            data = data._data
        if isinstance(data, dict):
            for name, values in data.items():
                self._data[str(name)] = _as_column(values)
        else:
            rows = list(data)
            names = list(columns) if columns is not None else (list(rows[0]) if rows else [])
            for name in names:
                self._data[str(name)] = _as_column(row[name] for row in rows)
        if columns is not None and isinstance(data, dict):
            self._data = {name: self._data.get(name, array("d")) for name in columns}
        lengths = {len(col) for col in self._data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns must be equally long, got lengths {sorted(lengths)}")

    @classmethod
    def _from_arrays(cls, arrays):
        """Wraps a dict of columns without copying (internal use)."""
        df = cls.__new__(cls)
        df._data = dict(arrays)
        return df

    @property
    def columns(self):
        """The column names, in order."""
        return list(self._data)

    def __len__(self):
        for col in self._data.values():
            return len(col)
        return 0

    def __iter__(self):
        return iter(self._data)

    def __contains__(self, name):
        return name in self._data

    def column_array(self, name):
        """The column itself (an array('d') for numbers), without copying."""
        return self._data[name]

    def __getitem__(self, key):
        if isinstance(key, str):
            try:
                return list(self._data[key])
            except KeyError:
                raise KeyError(f"no column {key!r}; columns: {', '.join(self._data)}") from None
        if isinstance(key, (list, tuple)):
            missing = [k for k in key if k not in self._data]
            if missing:
                raise KeyError(f"no columns {missing}; columns: {', '.join(self._data)}")
            return TinyDataFrame._from_arrays({k: self._data[k] for k in key})
        if isinstance(key, slice):
            return TinyDataFrame._from_arrays({k: v[key] for k, v in self._data.items()})
        if isinstance(key, int):
            n = len(self)
            index = key + n if key < 0 else key
            if not 0 <= index < n:
                raise IndexError(f"row {key} out of range for {n} rows")
            return {k: v[index] for k, v in self._data.items()}
        raise TypeError(f"TinyDataFrame indices are str, list of str, int or slice, not {key!r}")

    def head(self, n=5):
        """The first n rows."""
        return self[: max(n, 0)]

    def tail(self, n=5):
        """The last n rows."""
        return self[len(self) - max(n, 0) :] if n > 0 else self[:0]

    def rows(self):
        """Iterates over the rows as dicts."""
        for i in range(len(self)):
            yield self[i]

    def to_dict(self):
        """{column: list of values}."""
        return {k: list(v) for k, v in self._data.items()}

    def to_csv(self, path=None, sep=","):
        """The table as CSV text (numbers written losslessly); written to path when given."""
        lines = [sep.join(self._data)]
        cols = list(self._data.values())
        for i in range(len(self)):
            lines.append(
                sep.join(repr(c[i]) if isinstance(c[i], float) else str(c[i]) for c in cols)
            )
        text = "\n".join(lines) + "\n"
        if path is None:
            return text
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return None

    def to_pandas(self):
        """A pandas.DataFrame with the same columns (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install pandas") from exc
        return pd.DataFrame({k: list(v) for k, v in self._data.items()})

    def _table_lines(self, max_rows=_PRINT_ROWS):
        names = list(self._data)
        shown = min(len(self), max_rows)
        cells = [[_fmt(self._data[n][i]) for n in names] for i in range(shown)]
        widths = [max([len(n)] + [len(row[j]) for row in cells]) for j, n in enumerate(names)]
        lines = [" | ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip()]
        lines.append("-+-".join("-" * w for w in widths))
        lines += [" | ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
        if len(self) > shown:
            lines.append("...")
        return lines

    def __str__(self):
        head = f"TinyDataFrame with {len(self)} rows and {len(self._data)} columns"
        if not self._data:
            return head
        return head + ":\n" + "\n".join(self._table_lines())

    def __repr__(self):
        head = f"TinyDataFrame with {len(self)} rows and {len(self._data)} columns"
        if len(self) == 0:
            return head
        return f"{head}. First row as a dict: {self[0]}"

    def _repr_html_(self, max_rows=_PRINT_ROWS):
        from html import escape

        names = list(self._data)
        shown = min(len(self), max_rows)
        head = "".join(f"<th>{escape(n)}</th>" for n in names)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(_fmt(self._data[n][i]))}</td>" for n in names) + "</tr>"
            for i in range(shown)
        )
        more = f"<p>{len(self) - shown} more rows</p>" if len(self) > shown else ""
        return (
            f"<div><p>TinyDataFrame with {len(self)} rows and {len(names)} columns</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}</div>"
        )

    def __eq__(self, other):
        if not isinstance(other, TinyDataFrame):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None

    def __reduce__(self):
        return (_rebuild, (self._data,))


def _rebuild(data):
    """Unpickles a TinyDataFrame."""
    return TinyDataFrame._from_arrays(data)
