"""A small run-time check of a value against a TypedDict (resource_tracker.results_types):
every required key there, no key the class does not declare, and each value of its declared
type, nested TypedDicts, lists and dicts included. For the tests only (the package does not
check its own results at run time).

Understands what results_types uses: TypedDict classes, Optional/Union, List[X],
Dict[K, V], Any, and the plain types (an int passes for a float, as for a type checker; a
bool passes for no number).
"""

from __future__ import annotations

from typing import Any, List, Union, get_args, get_origin, get_type_hints


def is_typed_dict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def problems(tp: Any, value: Any, where: str = "value") -> List[str]:
    """Each way value is not of type tp, one line each naming the place ([] when it is)."""
    if tp is Any:
        return []
    if is_typed_dict(tp):
        return _typed_dict_problems(tp, value, where)
    origin = get_origin(tp)
    if origin is Union:
        options = [problems(option, value, where) for option in get_args(tp)]
        if any(not found for found in options):
            return []
        return [f"{where}: {value!r} is none of {tp}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        (item,) = get_args(tp)
        return [p for i, v in enumerate(value) for p in problems(item, v, f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a dict"]
        key_type, value_type = get_args(tp)
        found = []
        for k, v in value.items():
            found += problems(key_type, k, f"{where} key {k!r}")
            found += problems(value_type, v, f"{where}[{k!r}]")
        return found
    return _plain_problems(tp, value, where)


def _plain_problems(tp: Any, value: Any, where: str) -> List[str]:
    if tp is type(None):
        ok = value is None
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        raise TypeError(f"{where}: the checker does not know {tp!r}: teach it")
    return [] if ok else [f"{where}: {value!r} is a {type(value).__name__}, not {tp.__name__}"]


def _typed_dict_problems(tp: Any, value: Any, where: str) -> List[str]:
    if not isinstance(value, dict):
        return [f"{where}: {type(value).__name__}, not a dict ({tp.__name__})"]
    hints = get_type_hints(tp)
    found = [f"{where}: {tp.__name__} key {k!r} missing" for k in sorted(tp.__required_keys__)
             if k not in value]  # fmt: skip
    found += [f"{where}: key {k!r} is not in {tp.__name__}" for k in value if k not in hints]
    for key, v in value.items():
        if key in hints:
            found += problems(hints[key], v, f"{where}[{key!r}]")
    return found


def assert_typed(tp: Any, value: Any, where: str = "value") -> None:
    """AssertionError listing every problem of value against tp."""
    found = problems(tp, value, where)
    assert not found, "\n".join(found)
