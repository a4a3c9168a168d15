"""Reads a SQL text dump as data: its INSERT statements parsed into Python values.

Nothing of the dump is handed to SQLite. The statements a catalog dump holds are understood:
``CREATE TABLE`` (only its column names are kept: defaults, checks and generated columns are
never run), ``INSERT INTO t [(columns)] VALUES (...), ...`` with literal values (strings,
numbers, NULL, TRUE/FALSE, X'..' blobs, and the sqlite3 shell's ``replace('..', '\\n',
char(10))``, ``char(..)`` and ``unistr('..')`` spellings of text, decoded here, never growing
the text), and what ``.dump``/``iterdump()`` add around them (BEGIN/COMMIT, CREATE INDEX,
ANALYZE, ``PRAGMA foreign_keys``, ``DELETE FROM sqlite_sequence``); those are skipped.
Anything else (ATTACH, DROP, views, triggers, other PRAGMAs, INSERT ... SELECT) is refused
(``DumpRefused``); a statement that cannot be read is a ``DumpError`` naming it.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

MAX_STATEMENT = 64 << 20  # one statement (one INSERT) of a catalog dump is far smaller
MAX_NESTING = 8  # replace(replace(...)) depth of the shell's spelling of text
SKIPPED = ("BEGIN", "COMMIT", "END", "ANALYZE")
TABLE_CONSTRAINTS = ("CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN")
INT64 = 1 << 63

_TOKEN = re.compile(
    r"""(?P<skip>\s+|--[^\n]*|/\*.*?\*/)
    |(?P<str>'(?:[^']|'')*')
    |(?P<blob>[xX]'[0-9A-Fa-f]*')
    |(?P<id>"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\])
    |(?P<num>0[xX][0-9A-Fa-f]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<punct>[(),;.+\-*/=<>!|&%~?:@$])
    |(?P<bad>.)""",
    re.S | re.X,
)

Token = Tuple[str, str]  # (kind, text)
#: The Python value of one SQL literal of a dump.
Literal = Union[None, int, float, str, bytes]
#: The values of one row of an INSERT.
Row = Tuple[Literal, ...]
#: (table, its column names, rows) of one INSERT.
Insert = Tuple[str, List[str], List[Row]]


class DumpError(ValueError):
    """A statement of the dump could not be read as catalog data."""


class DumpRefused(ValueError):
    """The dump holds a statement that does more than create and fill tables."""


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def tokenize(text: str) -> List[Token]:
    """The tokens of text (comments and blanks dropped); DumpError at an unknown character
    or an unterminated string (every character is matched by one alternative of _TOKEN)."""
    out: List[Token] = []
    append = out.append
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "skip":
            continue
        if kind == "bad":
            raise DumpError(f"unreadable SQL at {_clip(text[m.start() :], 30)!r}")
        append((kind, m.group()))  # type: ignore[arg-type]
    return out


def _name(token: Token) -> str:
    """An identifier token as the name it spells (quotes removed)."""
    kind, text = token
    if kind == "id":
        quote = text[0]
        inner = text[1:-1]
        return inner if quote == "[" else inner.replace(quote * 2, quote)
    if kind in ("word", "str"):
        return text if kind == "word" else text[1:-1].replace("''", "'")
    raise DumpError(f"expected a name, found {text!r:.40}")


def _statements(tokens: List[Token]) -> Iterator[List[Token]]:
    """tokens split at ';' (empty statements dropped)."""
    start = 0
    for i, (kind, text) in enumerate(tokens):
        if kind == "punct" and text == ";":
            if i > start:
                yield tokens[start:i]
            start = i + 1
    if start < len(tokens):
        yield tokens[start:]


def _words(stmt: List[Token], n: int) -> List[str]:
    """The first n tokens of stmt, upper-cased ("" past its end)."""
    words = [text.upper() for _, text in stmt[:n]]
    return words + [""] * (n - len(words))


class Reader:
    """Turns the statements of a dump into (table, columns, rows) of its INSERTs; remembers
    the column names of each CREATE TABLE (generated columns left out, as INSERT does)."""

    def __init__(self, plain: bool = True) -> None:
        self.columns: Dict[str, List[str]] = {}
        self.plain = plain  # the regular-expression path for plain INSERTs (False: tokens only)

    def feed(self, text: str) -> Iterator[Insert]:
        """The INSERTs of text (complete statements), in order."""
        fast = _plain_insert(text) if self.plain else None
        if fast is not None:
            columns = self.columns.get(fast[0])
            if columns is not None and all(len(row) == len(columns) for row in fast[1]):
                yield fast[0], columns, fast[1]
                return
        for stmt in _statements(tokenize(text)):
            found = self._statement(stmt)
            if found is not None:
                yield found

    def _statement(self, stmt: List[Token]) -> Optional[Insert]:
        head = _words(stmt, 3)
        if head[0] in SKIPPED:
            return None
        if head[0] == "PRAGMA" and head[1:2] == ["FOREIGN_KEYS"]:
            return None
        if head[:3] == ["DELETE", "FROM", "SQLITE_SEQUENCE"] or head[:3] == [
            "DELETE",
            "FROM",
            '"SQLITE_SEQUENCE"',
        ]:
            return None
        if head[0] == "CREATE":
            self._create(stmt, head)
            return None
        if head[0] in ("INSERT", "REPLACE"):
            return self._insert(stmt)
        raise _refused(stmt)

    def _create(self, stmt: List[Token], head: List[str]) -> None:
        kind = head[2] if head[1] == "UNIQUE" else head[1]
        if kind == "INDEX":
            return None
        if kind != "TABLE":
            raise _refused(stmt)
        pos = 2
        if _words(stmt[pos:], 3) == ["IF", "NOT", "EXISTS"]:
            pos += 3
        table, pos = _table_name(stmt, pos)
        if pos >= len(stmt) or stmt[pos] != ("punct", "("):
            raise _refused(stmt)  # CREATE TABLE ... AS SELECT
        self.columns[table.lower()] = _column_names(stmt, pos)
        return None

    def _insert(self, stmt: List[Token]) -> Insert:
        pos = 1
        if stmt[0][1].upper() == "INSERT":
            if _words(stmt[1:], 1) == ["OR"]:
                pos = 3
            if _words(stmt[pos:], 1) != ["INTO"]:
                raise DumpError(f"an INSERT without INTO: {_text(stmt)!r}")
            pos += 1
        elif _words(stmt[1:], 1) == ["INTO"]:
            pos = 2
        table, pos = _table_name(stmt, pos)
        columns = self.columns.get(table.lower())
        if pos < len(stmt) and stmt[pos] == ("punct", "("):
            columns, pos = _name_list(stmt, pos)
        if _words(stmt[pos:], 1) != ["VALUES"]:
            raise _refused(stmt)  # INSERT ... SELECT, DEFAULT VALUES
        rows = _rows(stmt, pos + 1)
        if columns is None:
            raise DumpError(
                f"rows for table {table!r:.40} come before its CREATE TABLE (or without a "
                "column list)"
            )
        for row in rows:
            if len(row) != len(columns):
                raise DumpError(
                    f"a row of {table!r:.40} has {len(row)} values for {len(columns)} columns"
                )
        return table.lower(), columns, rows


def _text(stmt: List[Token]) -> str:
    return _clip(" ".join(text for _, text in stmt[:12]))


def _refused(stmt: List[Token]) -> DumpRefused:
    return DumpRefused(
        f"the SQL dump does more than create and fill tables (refused: {_text(stmt)!r}); "
        "only catalog data is loaded"
    )


def _table_name(stmt: List[Token], pos: int) -> Tuple[str, int]:
    """(table name, next position): `name` or `main.name` (another schema: refused)."""
    if pos >= len(stmt):
        raise DumpError(f"a statement ends before its table name: {_text(stmt)!r}")
    name = _name(stmt[pos])
    if pos + 1 < len(stmt) and stmt[pos + 1] == ("punct", "."):
        if name.lower() != "main" or pos + 2 >= len(stmt):
            raise _refused(stmt)
        return _name(stmt[pos + 2]), pos + 3
    return name, pos + 1


def _closing(stmt: List[Token], pos: int) -> int:
    """The position of the ')' that closes the '(' at pos."""
    depth = 0
    for i in range(pos, len(stmt)):
        kind, text = stmt[i]
        if kind == "punct" and text == "(":
            depth += 1
        elif kind == "punct" and text == ")":
            depth -= 1
            if depth == 0:
                return i
    raise DumpError(f"unbalanced parentheses in {_text(stmt)!r}")


def _column_names(stmt: List[Token], pos: int) -> List[str]:
    """The stored column names of the column list starting at pos (generated ones skipped)."""
    end = _closing(stmt, pos)
    names: List[str] = []
    item: List[Tuple[Token, int]] = []  # the tokens of one column definition, with their depth
    depth = 0
    for token in stmt[pos + 1 : end] + [("punct", ",")]:
        if token[0] == "punct" and token[1] in "()":
            depth += 1 if token[1] == "(" else -1
        if depth == 0 and token == ("punct", ","):
            first = item[0][0] if item else None
            if first and first[1].upper() not in TABLE_CONSTRAINTS and not _generated(item):
                names.append(_name(first))
            item = []
        else:
            item.append((token, depth))
    return names


def _generated(item: List[Tuple[Token, int]]) -> bool:
    """Whether a column definition (tokens with their depth) is a generated column."""
    return any(d == 0 and t[0] == "word" and t[1].upper() == "AS" for t, d in item[1:])


def _name_list(stmt: List[Token], pos: int) -> Tuple[List[str], int]:
    """(names, next position) of a parenthesised list of names at pos."""
    end = _closing(stmt, pos)
    names = [_name(t) for t in stmt[pos + 1 : end] if t != ("punct", ",")]
    return names, end + 1


def _rows(stmt: List[Token], pos: int) -> List[Row]:
    """The value tuples of VALUES (...), (...) from pos to the end of stmt."""
    rows: List[Row] = []
    while True:
        if pos >= len(stmt) or stmt[pos] != ("punct", "("):
            raise DumpError(f"expected '(' after VALUES in {_text(stmt)!r}")
        row, pos = _row(stmt, pos + 1)
        rows.append(row)
        if pos == len(stmt):
            return rows
        if stmt[pos] != ("punct", ","):
            raise DumpError(f"unexpected {stmt[pos][1]!r:.40} after a row of values")
        pos += 1


def _row(stmt: List[Token], pos: int) -> Tuple[Row, int]:
    """(tuple of values, position after its ')'); strings, numbers and NULL read inline
    (the bulk of a dump), everything else by _value."""
    values: List[Literal] = []
    end = len(stmt) - 1
    while pos < end:
        kind, text = stmt[pos]
        if kind == "str":
            values.append(text[1:-1].replace("''", "'") if "''" in text else text[1:-1])
            pos += 1
        elif kind == "num":
            values.append(_number(text))
            pos += 1
        elif kind == "word" and text.upper() == "NULL":
            values.append(None)
            pos += 1
        else:
            value, pos = _value(stmt, pos, 0)
            values.append(value)
            if pos > end:
                break
        kind, text = stmt[pos]
        if kind == "punct" and text == ")":
            return tuple(values), pos + 1
        if kind != "punct" or text != ",":
            raise DumpError(f"unexpected {text!r:.40} in a row of values")
        pos += 1
    raise DumpError(f"a row of values is not closed in {_text(stmt)!r}")


_WORD_VALUES: Dict[str, Literal] = {"NULL": None, "TRUE": 1, "FALSE": 0}


def _value(stmt: List[Token], pos: int, depth: int) -> Tuple[Literal, int]:
    """(Python value, next position) of the literal at pos; DumpError for anything else."""
    if pos >= len(stmt):
        raise DumpError("a row of values ends early")
    kind, text = stmt[pos]
    if kind == "str":
        return text[1:-1].replace("''", "'"), pos + 1
    if kind == "num":
        return _number(text), pos + 1
    if kind == "blob":
        if (len(text) - 3) % 2:
            raise DumpError(f"a blob literal with an odd number of hex digits: {_clip(text, 20)!r}")
        return bytes.fromhex(text[2:-1]), pos + 1
    if kind == "punct" and text in "+-" and pos + 1 < len(stmt) and stmt[pos + 1][0] == "num":
        number = _number(stmt[pos + 1][1])
        return (-number if text == "-" else number), pos + 2
    if kind == "word" and text.upper() in _WORD_VALUES:
        return _WORD_VALUES[text.upper()], pos + 1
    if kind == "word" and pos + 1 < len(stmt) and stmt[pos + 1] == ("punct", "("):
        return _shell_text(stmt, pos, depth)
    raise DumpError(f"a value that is not a literal: {_clip(text, 40)!r} (only data is loaded)")


def _number(text: str) -> Union[int, float]:
    """int or float of a numeric token (beyond 64 bits: float, as SQLite reads it)."""
    if text[:2].lower() == "0x":
        if len(text) > 18:
            raise DumpError(f"hex literal {text[:20]!r}... is larger than 64 bits")
        value = int(text, 16)
        return value - (1 << 64) if value >= INT64 else value
    if text.isdigit():
        value = int(text) if len(text) <= 19 else INT64
        if value < INT64:
            return value
    return float(text)


def _shell_text(stmt: List[Token], pos: int, depth: int) -> Tuple[str, int]:
    """(str, next position) of replace(X, 'marker', char(N)), char(N, ...) or unistr('..')."""
    name = stmt[pos][1].lower()
    end = _closing(stmt, pos + 1)
    if depth >= MAX_NESTING:
        raise DumpError(f"{name}() nested more than {MAX_NESTING} deep")
    args: List[Literal] = []
    at = pos + 2
    while at < end:
        value, at = _value(stmt, at, depth + 1)
        args.append(value)
        if at < end and stmt[at] != ("punct", ","):
            raise DumpError(f"unexpected {stmt[at][1]!r:.40} in {name}()")
        at += 1 if at < end else 0
    return _apply(name, args), end + 1


def _apply(name: str, args: List[Literal]) -> str:
    codes = [a for a in args if isinstance(a, int) and 0 <= a < 0x110000]
    if name == "char" and args and len(codes) == len(args):
        return "".join(map(chr, codes))
    texts = [a for a in args if isinstance(a, str)]
    if name == "unistr" and len(args) == 1 and len(texts) == 1:
        return _unistr(texts[0])
    if (
        name == "replace"
        and len(args) == 3
        and len(texts) == 3
        and 0 < len(texts[1]) <= 16
        and len(texts[2]) <= 1
    ):
        return texts[0].replace(texts[1], texts[2])  # never longer than texts[0]
    raise DumpError(
        f"{name}() with these arguments is not a spelling of text of the sqlite3 shell "
        "(only data is loaded)"
    )


_UNISTR = re.compile(
    r"\\(?:\\|u([0-9A-Fa-f]{4})|\+([0-9A-Fa-f]{6})|U([0-9A-Fa-f]{8})|([0-9A-Fa-f]{4}))"
)


def _unistr(text: str) -> str:
    """unistr()'s escapes decoded (\\\\, \\XXXX, \\uXXXX, \\+XXXXXX, \\UXXXXXXXX)."""

    def one(m: re.Match[str]) -> str:
        if m.group() == "\\\\":
            return "\\"
        code = int(next(g for g in m.groups() if g), 16)
        if code >= 0x110000 or 0xD800 <= code < 0xE000:
            raise DumpError(f"unistr() escape {m.group()!r} is not a character")
        return chr(code)

    return _UNISTR.sub(one, text)


_PLAIN_HEAD = re.compile(
    r'\s*INSERT\s+INTO\s+(?:"([^"]*)"\s*|([A-Za-z_][A-Za-z0-9_]*)\s+)VALUES\s*\(', re.I
)
_PLAIN_VALUE = re.compile(
    r"""\s*(?:'([^']*(?:''[^']*)*)'|(NULL)|(-?\d{1,18})|(-?(?:(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)))
    \s*([,)])""",
    re.I | re.X,
)
_PLAIN_NEXT = re.compile(r"\s*(?:(,)\s*\(|;\s*$)")


def _plain_insert(text: str) -> Optional[Tuple[str, List[Row]]]:
    """(table, rows) of the common statement of a dump -- one INSERT INTO t VALUES (...)[, ...]
    of strings, NULLs and decimal numbers -- read with a few regular expressions; None for
    anything else (which the tokenizer then reads)."""
    m = _PLAIN_HEAD.match(text)
    if m is None:
        return None
    table = (m.group(1) if m.group(1) is not None else m.group(2)).lower()
    pos, match = m.end(), _PLAIN_VALUE.match
    rows: List[Row] = []
    row: List[Literal] = []
    while True:
        v = match(text, pos)
        if v is None:
            return None
        text_value, null, integer, real, sep = v.groups()
        if text_value is not None:
            row.append(text_value.replace("''", "'") if "''" in text_value else text_value)
        elif null is not None:
            row.append(None)
        else:
            row.append(int(integer) if integer is not None else float(real))
        pos = v.end()
        if sep == ")":
            rows.append(tuple(row))
            row = []
            n = _PLAIN_NEXT.match(text, pos)
            if n is None:
                return None
            if n.group(1) is None:
                return table, rows
            pos = n.end()


def statements(lines: Iterable[str]) -> Iterator[str]:
    """The text of lines cut after complete statements (each piece ends at a ';' that closes
    a statement); DumpError when one statement is longer than MAX_STATEMENT or the text ends
    in the middle of one."""
    pending: List[str] = []
    size = 0
    for line in lines:
        pending.append(line)
        size += len(line)
        if line.rstrip().endswith(";"):
            text = "".join(pending)
            if sqlite3.complete_statement(text):  # a lexer check: nothing is run
                yield text
                pending, size = [], 0
                continue
        if size > MAX_STATEMENT:
            raise DumpError(f"a statement longer than {MAX_STATEMENT >> 20} MiB")
    text = "".join(pending)
    if text.strip():
        if not sqlite3.complete_statement(text):
            raise DumpError("the SQL dump ends in the middle of a statement (a cut download?)")
        yield text


def read(lines: Iterable[str], reader: Optional[Reader] = None) -> Iterator[Insert]:
    """(table, columns, rows) of every INSERT of the dump in lines, in order."""
    reader = reader or Reader()
    for text in statements(lines):
        yield from reader.feed(text)
