"""``render_template()``: the small Handlebars-like template engine that code written for the
original package (0.4/0.5) imports from ``resource_tracker.tiny_bars``.

The language:

- ``{{expr}}`` the value, HTML-escaped; ``{{{expr}}}`` the value as it is;
- ``expr`` is a name, with dots into dicts, attributes, list indexes and frame columns
  (``run.stats.cpu``, ``servers.0``), then filters: ``{{expr | name}}``, ``{{expr | name:arg}}``,
  chained left to right (``FILTERS`` lists them);
- ``{{#if expr}}...{{#else}}...{{/if}}`` (a name that is not there is false);
- ``{{#each expr as item}}...{{/each}}`` (``item`` is seen inside the block only); blocks nest.

A name that is not there outside ``#if``, an unknown filter or a block left open raises
ValueError or KeyError naming it and its line. The report of this package is built by its own
renderer (resource_tracker/report); this module is for code that used the original's.
"""

from __future__ import annotations

import html
import re
import time
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, MutableMapping, Tuple, Union

from .report import round_memory

__all__ = ["FILTERS", "render_template"]

#: a tag: {{{raw}}} first, then {{anything}}; group 1 or 2 is the tag's text
_TAG = re.compile(r"\{\{\{(.*?)\}\}\}|\{\{(.*?)\}\}", re.S)
_EACH = re.compile(r"^(\S+(?:\s*\|.*?)?)\s+as\s+([A-Za-z_][A-Za-z0-9_]*)$", re.S)


def _number(value: Any, what: str) -> float:
    """value as a float; ValueError naming what for anything that is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: {value!r:.40} is not a number") from None
    return float(value)


def pretty_number(value: Any, digits: int = 0) -> str:
    """value with thousands separators, rounded to digits decimals, trailing zeros dropped
    (1234.5678 -> '1,235'; with digits 2 -> '1,234.57'); a value that is not a number as text."""
    try:
        number = _number(value, "pretty_number")
    except ValueError:
        return str(value)
    text = f"{number:,.{max(int(digits), 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def divide(value: Any, divisor: Any = 1) -> float:
    """value / divisor; ValueError for a value or divisor that is not a number, or 0."""
    den = _number(divisor, "divide's divisor")
    if den == 0:
        raise ValueError(f"divide: division of {value!r:.40} by zero")
    return _number(value, "divide") / den


def round_to(value: Any, digits: int = 0) -> Any:
    """value rounded to digits decimals (a float); a value that is not a number as it is."""
    try:
        return round(_number(value, "round"), int(digits))
    except ValueError:
        return value


def index(value: Any, position: int = 0) -> Any:
    """value[position]; ValueError when value has no such item."""
    try:
        return value[position]
    except (IndexError, KeyError, TypeError):
        raise ValueError(f"index: no item {position!r} in {value!r:.60}") from None


def local_time(value: Any) -> str:
    """A Unix timestamp as 'YYYY-MM-DD HH:MM:SS TZ' in the local time zone."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(_number(value, "timestamp")))


#: filter name -> function(value, *args)
FILTERS: Dict[str, Callable[..., Any]] = {
    "pretty_number": pretty_number,
    "divide": divide,
    "round": round_to,
    "round_memory": lambda mib: round_memory(_number(mib, "round_memory")),
    "index": index,
    "unix_timestamp_to_local_tz_string": local_time,
}


# -- the tree ----------------------------------------------------------------------------------


@dataclass
class _Output:
    expr: str
    escape: bool
    line: int


@dataclass
class _If:
    expr: str
    line: int
    then: List[_Node] = field(default_factory=list)
    otherwise: List[_Node] = field(default_factory=list)


@dataclass
class _Each:
    expr: str
    name: str
    line: int
    body: List[_Node] = field(default_factory=list)


_Node = Union[str, _Output, _If, _Each]


def _tokens(template: str) -> List[Tuple[str, str, int]]:
    """(kind, text, line) of the template in order: kind 'text', 'raw' or 'tag'."""
    found: List[Tuple[str, str, int]] = []
    end = 0
    for match in _TAG.finditer(template):
        if match.start() > end:
            found.append(("text", template[end : match.start()], 0))
        line = template.count("\n", 0, match.start()) + 1
        raw = match.group(1)
        found.append(
            ("raw", raw.strip(), line) if raw is not None else ("tag", match.group(2).strip(), line)
        )
        end = match.end()
    if end < len(template):
        found.append(("text", template[end:], 0))
    return found


def _parse(template: str) -> List[_Node]:
    """The template's tree; ValueError for a block left open, closed twice or closed wrongly."""
    root: List[_Node] = []
    stack: List[Tuple[Union[_If, _Each], List[_Node]]] = []  # open blocks, the list filled now
    into = root
    for kind, text, line in _tokens(template):
        if kind != "tag":
            into.append(text if kind == "text" else _Output(text, False, line))
        elif text.startswith("#if"):
            block = _If(_block_expr(text, "#if", line), line)
            into.append(block)
            stack.append((block, into))
            into = block.then
        elif text.startswith("#each"):
            block_each = _each_block(text, line)
            into.append(block_each)
            stack.append((block_each, into))
            into = block_each.body
        elif text == "#else":
            if not stack or not isinstance(stack[-1][0], _If) or into is stack[-1][0].otherwise:
                raise ValueError(f"line {line}: {{{{#else}}}} outside an {{{{#if}}}} block")
            into = stack[-1][0].otherwise
        elif text in ("/if", "/each"):
            into = _close(stack, text, line)
        else:
            into.append(_Output(text, True, line))
    if stack:
        raise ValueError(f"line {stack[-1][0].line}: {_opening(stack[-1][0])} is never closed")
    return root


def _opening(block: Union[_If, _Each]) -> str:
    """The tag that opened block, as written ({{#if x}}, {{#each xs as x}})."""
    if isinstance(block, _If):
        return f"{{{{#if {block.expr}}}}}"
    return f"{{{{#each {block.expr} as {block.name}}}}}"


def _block_expr(text: str, opener: str, line: int) -> str:
    expr = text[len(opener) :].strip()
    if not expr or not text[len(opener)].isspace():
        raise ValueError(f"line {line}: {{{{{text}}}}}: write {{{{{opener} expression}}}}")
    return expr


def _each_block(text: str, line: int) -> _Each:
    match = _EACH.match(_block_expr(text, "#each", line))
    if match is None:
        raise ValueError(f"line {line}: {{{{{text}}}}}: write {{{{#each list as item}}}}")
    return _Each(match.group(1).strip(), match.group(2), line)


def _close(stack: List[Tuple[Union[_If, _Each], List[_Node]]], text: str, line: int) -> List[_Node]:
    """The list to fill after the block closed by text; ValueError when it is not the open one."""
    want = _If if text == "/if" else _Each
    if not stack or not isinstance(stack[-1][0], want):
        open_text = "nothing is open"
        if stack:
            open_text = f"open: {_opening(stack[-1][0])} of line {stack[-1][0].line}"
        raise ValueError(f"line {line}: {{{{{text}}}}} closes no block here ({open_text})")
    return stack.pop()[1]


# -- rendering ---------------------------------------------------------------------------------


def _argument(text: str) -> Any:
    """A filter's argument: an int, a float, else the text without quotes."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip("\"'")


def _lookup(path: str, scope: Mapping[str, Any], line: int) -> Any:
    """The value at the dotted path; KeyError naming the path and the part missing."""
    value: Any = scope
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif not isinstance(value, Mapping) and hasattr(value, part):
            value = getattr(value, part)
        else:
            try:
                value = value[int(part)] if part.lstrip("-").isdigit() else value[part]
            except (LookupError, TypeError):
                raise KeyError(f"line {line}: {part!r} not found in {path!r}") from None
    return value


def _evaluate(expr: str, scope: Mapping[str, Any], line: int) -> Any:
    """The value of 'path | filter:arg | ...'; ValueError for an unknown filter."""
    path, *filters = (part.strip() for part in expr.split("|"))
    value = _lookup(path, scope, line)
    for spec in filters:
        name, _, arg = spec.partition(":")
        func = FILTERS.get(name.strip())
        if func is None:
            known = ", ".join(FILTERS)
            raise ValueError(f"line {line}: unknown filter {name.strip()!r}; known: {known}")
        value = func(value, _argument(arg.strip())) if arg else func(value)
    return value


def _render(nodes: List[_Node], scope: MutableMapping[str, Any]) -> str:
    out: List[str] = []
    for node in nodes:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, _Output):
            value = _evaluate(node.expr, scope, node.line)
            text = "" if value is None else str(value)
            out.append(html.escape(text) if node.escape else text)
        elif isinstance(node, _If):
            try:
                chosen = bool(_evaluate(node.expr, scope, node.line))
            except KeyError:
                chosen = False
            out.append(_render(node.then if chosen else node.otherwise, scope))
        else:
            for item in _evaluate(node.expr, scope, node.line) or ():
                out.append(_render(node.body, ChainMap({node.name: item}, scope)))
    return "".join(out)


def render_template(template: str, context: Mapping[str, Any]) -> str:
    """The template filled from context (the language: this module's docstring).

    Example:
        >>> render_template("Hello, {{name}}!", {"name": "World"})
        'Hello, World!'
        >>> render_template("{{#each names as n}}<{{n}}>{{/each}}", {"names": ["a&b", "c"]})
        '<a&amp;b><c>'
        >>> render_template("{{#if ok}}yes{{#else}}no{{/if}}", {"ok": False})
        'no'
        >>> render_template("{{v | divide:1000 | pretty_number:1}} s", {"v": 1234567})
        '1,234.6 s'
    """
    return _render(_parse(template), ChainMap({}, dict(context)))
