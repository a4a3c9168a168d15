"""TinyDataFrame: a small column store for the tracker's samples.

Columns of numbers are kept as ``array('d')`` (8 bytes a value), columns of whole numbers
as ``array('q')``, anything else (strings, None, mixed) as a list; ``df["col"]`` gives a
plain list with the values as they were given. It prints as a table (first rows), renders
as HTML in notebooks, reads and writes CSV (a file or a URL), pickles compactly (Metaflow
artifacts) and converts to pandas when pandas is installed.
"""

from __future__ import annotations

import numbers
import os
from array import array

TYPE_CHECKING = False  # no typing import at run time (~2 MiB, milliseconds)
if TYPE_CHECKING:
    from typing import (
        Any,
        Dict,
        Iterable,
        Iterator,
        List,
        Mapping,
        Optional,
        Tuple,
        Union,
        overload,
    )

if TYPE_CHECKING:
    #: A stored column: array('d') of numbers, array('q') of whole numbers, else a list.
    Column = Union["array[float]", "array[int]", List[Any]]
else:

    def overload(func):  # typing.overload, without importing typing at run time
        return func


_PRINT_ROWS = 10
_URL_TIMEOUT_S = 30.0


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


def _csv_field(value: Any, sep: str) -> str:
    """One CSV field: numbers as written by repr (lossless), strings quoted, None empty."""
    if value is None:
        return ""
    if _is_int(value):
        return str(int(value))
    if _is_number(value):
        return repr(float(value))
    return '"' + str(value).replace('"', '""') + '"'


def _csv_name(name: str, sep: str) -> str:
    """A header field: quoted only when it has to be."""
    if any(ch in name for ch in (sep, '"', "\n", "\r")) or name != name.strip():
        return _csv_field(name, sep)
    return name


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


def _read_csv_source(source: Union[str, os.PathLike[str]], sep: str) -> Dict[str, List[Any]]:
    """{column: values} from a CSV file path or an http(s)/file URL."""
    import os

    source = os.fspath(source)
    if "://" in source:
        import urllib.request

        try:
            with urllib.request.urlopen(source, timeout=_URL_TIMEOUT_S) as answer:
                text = answer.read().decode("utf-8-sig")
        except Exception as exc:
            raise ValueError(f"cannot read CSV from {source}: {exc}") from None
    else:
        with open(source, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    return _parse_csv(text, sep, source)


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
    or ``TinyDataFrame(csv_file_path="samples.csv")`` (a file or an http(s) URL).
    """

    __slots__ = ("_data",)

    def __init__(
        self,
        data: Union[
            Mapping[str, Iterable[Any]], Iterable[Mapping[str, Any]], TinyDataFrame, None
        ] = None,
        columns: Optional[Iterable[str]] = None,
        csv_file_path: Optional[Union[str, os.PathLike[str]]] = None,
        sep: str = ",",
    ) -> None:
        self._data: Dict[str, Any] = {}
        if csv_file_path is not None:
            if data is not None:
                raise ValueError("give either data or csv_file_path, not both")
            data = _read_csv_source(csv_file_path, sep)
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

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

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
            raise KeyError(f"no column {name!r}; columns: {', '.join(self._data)}") from None

    def rename(self, columns: Mapping[str, str], inplace: bool = False) -> Optional[TinyDataFrame]:
        """The frame with columns renamed by the {old: new} mapping (names not in the frame
        are ignored); a new frame, or this one changed when inplace=True."""
        if not isinstance(columns, dict):
            raise TypeError("rename() takes a dict {old name: new name}")
        renamed = {str(columns.get(name, name)): col for name, col in self._data.items()}
        if len(renamed) != len(self._data):
            raise ValueError(f"rename({columns}) would give two columns the same name")
        if inplace:
            self._data = renamed
            return None
        return TinyDataFrame._from_arrays(renamed)

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

    def to_dict(self) -> Dict[str, List[Any]]:
        """{column: list of values}."""
        return {k: list(v) for k, v in self._data.items()}

    def to_csv(
        self, path: Optional[Union[str, os.PathLike[str]]] = None, sep: str = ","
    ) -> Optional[str]:
        """The table as CSV text; written to path when given (then None is returned).

        Numbers are written losslessly (floats with repr, ints as ints), strings in double
        quotes, None as an empty field: ``TinyDataFrame(csv_file_path=...)`` reads it back
        equal, with the same types.
        """
        if not self._data:
            text = ""
        else:
            lines = [sep.join(_csv_name(name, sep) for name in self._data)]
            cols = list(self._data.values())
            for i in range(len(self)):
                lines.append(sep.join(_csv_field(c[i], sep) for c in cols))
            text = "\n".join(lines) + "\n"
        if path is None:
            return text
        with open(path, "w", encoding="utf-8") as f:
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

    def _empty_text(self) -> str:
        if not self._data:
            return "Empty TinyDataFrame: no columns, no rows"
        return f"Empty TinyDataFrame: no rows; columns: {', '.join(self._data)}"

    def __str__(self) -> str:
        if len(self) == 0:
            return self._empty_text()
        return self._size_text() + ":\n" + "\n".join(self._table_lines())

    def __repr__(self) -> str:
        if len(self) == 0:
            return self._empty_text()
        return f"{self._size_text()}. First row as a dict: {self[0]}"

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
        title = escape(self._size_text() if len(self) else self._empty_text())
        return (
            f"<div><p>{title}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}</div>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TinyDataFrame):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __reduce__(self) -> Tuple[Any, Tuple[Dict[str, Any]]]:
        data = {
            k: _float_array(v) if isinstance(v, memoryview) else v for k, v in self._data.items()
        }
        return (_rebuild, (data,))


def _rebuild(data: Dict[str, Any]) -> TinyDataFrame:
    """Unpickles a TinyDataFrame."""
    return TinyDataFrame._from_arrays(data)
