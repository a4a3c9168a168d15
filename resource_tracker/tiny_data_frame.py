"""TinyDataFrame: a small column store for the tracker's samples.

Columns of numbers are kept as ``array('d')`` (8 bytes a value), columns of whole numbers
as ``array('q')``, anything else (strings, None, mixed) as a list; ``df["col"]`` gives a
plain list with the values as they were given. It prints as a table (first rows), renders
as HTML in notebooks, reads and writes CSV (a file or a URL), pickles compactly (Metaflow
artifacts) and converts to pandas when pandas is installed.

It behaves as the original package's TinyDataFrame (0.4/0.5) where code written for that
one relies on it: iterating yields one dict per row, ``to_dict()`` is a list of row dicts,
``rename()`` renames in place and returns the frame, ``to_csv(quote_strings=...)`` quotes
the header with the strings, ``stats([StatSpec(...)])`` summarises columns, a CSV that
cannot be read raises ``RuntimeError`` (after ``retries``); see docs/migrating.md.
"""

from __future__ import annotations

import numbers
import os
from array import array
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Tuple,
    Union,
    overload,
)

from ._renamed import renamed_hint

#: A stored column: array('d') of numbers, array('q') of whole numbers, else a list.
Column = Union["array[float]", "array[int]", List[Any]]

_PRINT_ROWS = 10
_URL_TIMEOUT_S = 30.0


class StatSpec(NamedTuple):
    """One statistic of ``TinyDataFrame.stats()``: ``agg`` (a function of the column's
    list of values) on ``column``, reported as ``agg_name`` (default: the function's
    ``__name__``), rounded to ``round`` decimals when given."""

    column: str
    agg: Callable[[List[Any]], Any]
    agg_name: Optional[str] = None
    round: Optional[int] = None


class CsvReadError(RuntimeError, ValueError):
    """A CSV file or URL that could not be read or parsed (a RuntimeError, as the original
    package raised; also a ValueError)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _as_column(values: Iterable[Any]) -> Column:
    """array('q') when every value is a whole number (int), array('d') when every value is
    a number, else a list (the values as given)."""
    if isinstance(values, array) and values.typecode in ("d", "q"):
        return array(values.typecode, values)
    if isinstance(values, memoryview) and values.format == "d":  # the sampler's column views
        return _float_array(values)
    values = list(values)
    if values and all(_is_int(v) for v in values):
        try:
            return array("q", values)
        except OverflowError:  # beyond 64 bits: kept as Python ints
            return values
    if all(_is_number(v) for v in values):
        return array("d", values)
    return values


def _float_array(view: memoryview) -> array[float]:
    """A writable array('d') copy of a float64 buffer (one memcpy)."""
    col = array("d")
    col.frombytes(view.cast("B"))
    return col


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _csv_text(text: str, sep: str, quote: bool) -> str:
    """A string field: quoted when quote is True, else only when it has to be (it holds
    sep, a quote or a line break, or spaces at an end)."""
    if quote or any(ch in text for ch in (sep, '"', "\n", "\r")) or text != text.strip():
        return _quoted(text)
    return text


def _csv_field(value: Any, sep: str, quote: bool = True) -> str:
    """One CSV field: numbers as written by repr (lossless), strings as _csv_text, None empty."""
    if value is None:
        return ""
    if _is_int(value):
        return str(int(value))
    if _is_number(value):
        return repr(float(value))
    return _csv_text(str(value), sep, quote)


def _split_csv(text: str, sep: str) -> List[List[Tuple[str, bool]]]:
    """Rows of (field, was_quoted) pairs from CSV text (quotes may hold sep and newlines)."""
    rows, row, field, quoted, in_quotes, i = [], [], [], False, False, 0
    n = len(text)
    while i < n:
        ch = text[i]
        if in_quotes:
            if ch == '"' and i + 1 < n and text[i + 1] == '"':
                field.append('"')
                i += 1
            elif ch == '"':
                in_quotes = False
            else:
                field.append(ch)
        elif ch == '"':
            in_quotes = quoted = True
        elif ch == sep:
            row.append(("".join(field), quoted))
            field, quoted = [], False
        elif ch in "\r\n":
            if ch == "\r" and i + 1 < n and text[i + 1] == "\n":
                i += 1
            row.append(("".join(field), quoted))
            if any(value or was_quoted for value, was_quoted in row) or len(row) > 1:
                rows.append(row)
            row, field, quoted = [], [], False
        else:
            field.append(ch)
        i += 1
    if in_quotes:
        raise ValueError("CSV text ends inside a quoted field (a missing closing quote)")
    if field or quoted or row:
        row.append(("".join(field), quoted))
        rows.append(row)
    return rows


def _csv_value(text: str, quoted: bool) -> Any:
    """A field's value: quoted -> str; else int, float, None (empty) or the text itself."""
    if quoted:
        return text
    text = text.strip()
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _read_csv_text(source: str) -> str:
    """The text of a CSV file path or an http(s)/file URL."""
    if "://" in source:
        import urllib.request

        with urllib.request.urlopen(source, timeout=_URL_TIMEOUT_S) as answer:
            return str(answer.read().decode("utf-8-sig"))
    with open(source, encoding="utf-8-sig", newline="") as f:
        return f.read()


#: How the CSV reader waits between attempts (None: time.sleep; tests count the waits).
_retry_sleep: Optional[Callable[[float], Any]] = None


def _read_csv_source(
    source: Union[str, os.PathLike[str]], sep: str, retries: int = 0, retry_delay: float = 0.1
) -> Dict[str, List[Any]]:
    """{column: values} from a CSV file path or an http(s)/file URL, read up to 1 + retries
    times (a file being written, a server that is busy), waiting retry_delay seconds before
    the first retry and twice as long before each next one. CsvReadError when it cannot be
    read or parsed after that."""
    import os

    source = os.fspath(source)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100:
        raise ValueError(f"retries must be a whole number from 0 to 100, got {retries!r}")
    try:
        delay = float(retry_delay)
    except (TypeError, ValueError):
        delay = float("nan")
    if not 0 <= delay <= 3600:
        raise ValueError(f"retry_delay must be seconds from 0 to 3600, got {retry_delay!r}")
    for attempt in range(1, retries + 2):
        try:
            return _parse_csv(_read_csv_text(source), sep, source)
        except Exception as exc:  # noqa: PERF203 - retried on purpose
            if attempt > retries:
                tries = f"after {attempt} attempts" if attempt > 1 else "(1 attempt)"
                raise CsvReadError(f"cannot read CSV from {source} {tries}: {exc}") from exc
        if delay > 0:
            import time

            (_retry_sleep or time.sleep)(delay)
        delay *= 2
    raise AssertionError("unreachable")  # pragma: no cover


def _parse_csv(text: str, sep: str, where: str = "CSV text") -> Dict[str, List[Any]]:
    rows = _split_csv(text, sep)
    if not rows:
        return {}
    names = [name for name, _ in rows[0]]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: the header names a column twice: {names}")
    columns: Dict[str, List[Any]] = {name: [] for name in names}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(names):
            raise ValueError(
                f"{where}: row {line} has {len(row)} fields, the header has {len(names)}"
            )
        for name, (value, quoted) in zip(names, row):
            columns[name].append(_csv_value(value, quoted))
    return columns


def _fmt(value: Any) -> str:
    """A short text for one table cell (numbers rounded to 4 decimals for display only)."""
    if isinstance(value, float):
        return repr(round(value, 4))
    return str(value)


class TinyDataFrame:
    """A dictionary of equally long columns with table-like access.

    ``TinyDataFrame({"a": [1, 2], "b": [3, 4]})``, ``TinyDataFrame([{"a": 1, "b": 3}, ...])``
    or ``TinyDataFrame(csv_file_path="samples.csv")`` (a file or an http(s) URL; ``retries``
    more attempts when reading fails, the first after ``retry_delay`` seconds, each next
    one after twice as long; then ``RuntimeError``). ``columns``: the columns to keep, in
    this order (missing ones are empty); ``sep``: the CSV separator.

    Iterating yields the rows as dicts (as the original package's frame did); ``columns``
    lists the names.
    """

    __slots__ = ("_data",)

    def __init__(
        self,
        data: Union[
            Mapping[str, Iterable[Any]], Iterable[Mapping[str, Any]], TinyDataFrame, None
        ] = None,
        csv_file_path: Optional[Union[str, os.PathLike[str]]] = None,
        retries: int = 0,
        retry_delay: float = 0.1,
        *,
        columns: Optional[Iterable[str]] = None,
        sep: str = ",",
    ) -> None:
        self._data: Dict[str, Any] = {}
        if csv_file_path is not None:
            if data is not None:
                raise ValueError("give either data or csv_file_path, not both")
            data = _read_csv_source(csv_file_path, sep, retries, retry_delay)
        if data is None:
            data = {}
        if isinstance(data, TinyDataFrame):
            data = data._data
        if isinstance(data, dict):
            for name, values in data.items():
                self._data[str(name)] = _as_column(values)
        else:
            rows: List[Any] = list(data)
            names = list(columns) if columns is not None else (list(rows[0]) if rows else [])
            for name in names:
                self._data[str(name)] = _as_column(row[name] for row in rows)
        if columns is not None and isinstance(data, dict):
            self._data = {name: self._data.get(name, array("d")) for name in columns}
        lengths = {len(col) for col in self._data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns must be equally long, got lengths {sorted(lengths)}")

    @classmethod
    def _from_arrays(cls, arrays: Mapping[str, Any]) -> TinyDataFrame:
        """Wraps a dict of columns without copying (internal use)."""
        df = cls.__new__(cls)
        df._data = dict(arrays)
        return df

    @property
    def columns(self) -> List[str]:
        """The column names, in order."""
        return list(self._data)

    def __len__(self) -> int:
        for col in self._data.values():
            return len(col)
        return 0

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        """The rows, as dicts (``for row in df``); ``df.columns`` lists the names."""
        return self.rows()

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def column_array(self, name: str) -> Any:
        """The column itself (an array('d') for numbers, or a read-only float64 memoryview
        of a stopped tracker's samples), without copying."""
        return self._data[name]

    @overload
    def __getitem__(self, key: str) -> List[Any]: ...  # noqa: F811
    @overload
    def __getitem__(self, key: int) -> Dict[str, Any]: ...  # noqa: F811
    @overload
    def __getitem__(self, key: Union[slice, List[str], Tuple[str, ...]]) -> TinyDataFrame: ...  # noqa: F811
    def __getitem__(self, key: Any) -> Any:  # noqa: F811
        if isinstance(key, str):
            try:
                return list(self._data[key])
            except KeyError:
                raise KeyError(self._missing_text(key)) from None
        if isinstance(key, (list, tuple)):
            missing = [k for k in key if k not in self._data]
            if missing:
                raise KeyError(self._missing_text(*missing))
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

    def __setitem__(self, name: str, values: Any) -> None:
        """Sets (or adds) a column: a list of len(df) values, or one value for every row."""
        if not isinstance(name, str):
            raise TypeError(f"column names are str, got {name!r}")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            values = [values] * len(self)
        column = _as_column(values)
        if self._data and len(column) != len(self):
            raise ValueError(
                f"column {name!r} has {len(column)} values, the frame has {len(self)} rows"
            )
        self._data[name] = column

    def __delitem__(self, name: str) -> None:
        try:
            del self._data[name]
        except KeyError:
            raise KeyError(self._missing_text(name)) from None

    def _missing_text(self, *names: Any) -> str:
        """The KeyError message for names that are not columns (a 0.5 name: what to read)."""
        hints = [hint for hint in map(renamed_hint, names) if hint]
        what = f"no column {names[0]!r}" if len(names) == 1 else f"no columns {list(names)}"
        return "; ".join([what] + hints + [f"columns: {', '.join(self._data)}"])

    def rename(self, columns: Mapping[str, str]) -> TinyDataFrame:
        """Renames columns by the {old: new} mapping, in place, and returns this frame (for
        chaining: ``df.rename({...}).to_csv()``). KeyError names the old names that are not
        columns (nothing is renamed then); ValueError when two columns would share a name.
        A renamed copy: ``TinyDataFrame(df).rename({...})``."""
        if not isinstance(columns, dict):
            raise TypeError("rename() takes a dict {old name: new name}")
        missing = [name for name in columns if name not in self._data]
        if missing:
            raise KeyError(self._missing_text(*missing))
        renamed = {str(columns.get(name, name)): col for name, col in self._data.items()}
        if len(renamed) != len(self._data):
            raise ValueError(f"rename({columns}) would give two columns the same name")
        self._data = renamed
        return self

    def head(self, n: int = 5) -> TinyDataFrame:
        """The first n rows."""
        return self[: max(n, 0)]

    def tail(self, n: int = 5) -> TinyDataFrame:
        """The last n rows."""
        return self[len(self) - max(n, 0) :] if n > 0 else self[:0]

    def rows(self) -> Iterator[Dict[str, Any]]:
        """Iterates over the rows as dicts."""
        for i in range(len(self)):
            yield self[i]

    def to_dict(self) -> List[Dict[str, Any]]:
        """The rows as a list of dicts (as the original package's frame gave them); the
        columns as lists: ``to_columns()``."""
        return list(self.rows())

    def to_columns(self) -> Dict[str, List[Any]]:
        """{column: list of values}."""
        return {k: list(v) for k, v in self._data.items()}

    def stats(self, specs: Iterable[StatSpec]) -> Dict[str, Dict[str, Any]]:
        """Statistics of columns: ``{column: {agg_name: value}}``, one entry per StatSpec
        (``agg`` called with the column's values as a list; ``round`` decimals when given).
        KeyError for a column that is not in the frame.

        Example:
            >>> from statistics import mean
            >>> df = TinyDataFrame({"cpu_usage": [0.5, 1.0, 2.0]})
            >>> df.stats([StatSpec("cpu_usage", mean, round=2), StatSpec("cpu_usage", max)])
            {'cpu_usage': {'mean': 1.17, 'max': 2.0}}
        """
        out: Dict[str, Dict[str, Any]] = {}
        for spec in specs:
            spec = StatSpec(*spec)
            value = spec.agg(self[spec.column])
            if spec.round is not None:
                value = round(value, spec.round)
            out.setdefault(spec.column, {})[spec.agg_name or spec.agg.__name__] = value
        return out

    def to_csv(
        self,
        csv_file_path: Optional[Union[str, os.PathLike[str]]] = None,
        quote_strings: bool = True,
        sep: str = ",",
    ) -> Optional[str]:
        """The table as CSV text; written to csv_file_path when given (then None is returned).

        Numbers are written losslessly (floats with repr, ints as ints), None as an empty
        field; the header and the strings in double quotes (``quote_strings=False``: only
        where a field needs them). ``TinyDataFrame(csv_file_path=...)`` reads it back
        equal, with the same types.
        """
        if not self._data:
            text = ""
        else:
            lines = [sep.join(_csv_text(name, sep, quote_strings) for name in self._data)]
            cols = list(self._data.values())
            for i in range(len(self)):
                lines.append(sep.join(_csv_field(c[i], sep, quote_strings) for c in cols))
            text = "\n".join(lines) + "\n"
        if csv_file_path is None:
            return text
        with open(csv_file_path, "w", encoding="utf-8") as f:
            f.write(text)
        return None

    def to_pandas(self) -> Any:
        """A pandas.DataFrame with the same columns (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install pandas") from exc
        return pd.DataFrame({k: list(v) for k, v in self._data.items()})

    def _table_lines(self, max_rows: int = _PRINT_ROWS) -> List[str]:
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

    def _size_text(self) -> str:
        # always "rows"/"columns", as the seeds print it (scripts may match the text)
        return f"TinyDataFrame with {len(self)} rows and {len(self._data)} columns"

    def __str__(self) -> str:
        if len(self) == 0:  # the original package's text (scripts may match it)
            return self._size_text() + ":\nEmpty dataframe"
        return self._size_text() + ":\n" + "\n".join(self._table_lines())

    def __repr__(self) -> str:
        return f"{self._size_text()}. First row as a dict: {self[0] if len(self) else {}}"

    def _repr_html_(self, max_rows: int = _PRINT_ROWS) -> str:
        from html import escape

        names = list(self._data)
        shown = min(len(self), max_rows)
        head = "".join(f"<th>{escape(n)}</th>" for n in names)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(_fmt(self._data[n][i]))}</td>" for n in names) + "</tr>"
            for i in range(shown)
        )
        more = f"<p>{len(self) - shown} more rows</p>" if len(self) > shown else ""
        title = escape(self._size_text() if len(self) else str(self))
        return (
            f"<div><p>{title}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}</div>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TinyDataFrame):
            return NotImplemented
        return self.to_columns() == other.to_columns()

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __reduce__(self) -> Tuple[Any, Tuple[Dict[str, Any]]]:
        data = {
            k: _float_array(v) if isinstance(v, memoryview) else v for k, v in self._data.items()
        }
        return (_rebuild, (data,))


def _rebuild(data: Dict[str, Any]) -> TinyDataFrame:
    """Unpickles a TinyDataFrame."""
    return TinyDataFrame._from_arrays(data)
