"""Checking what users pass to constructors: one place, one kind of error.

A bad argument to a public constructor (`Agent(max_turns="3")`, `Route(retries=-1)`,
`Budget(max_tokens=-1)`, `Agent(tools=[42])`) is a `UserError` that shows the argument
with `!r` and says what would be accepted, never a bare TypeError from deep inside, an
AttributeError, or a pydantic ValidationError naming some internal model. Wrong types
raise `UserTypeError` (also a `TypeError`); out-of-range values a plain `UserError` (a
`ValueError`), so generic handlers catch either.

Two mechanisms share the messages:

- `ConfigModel` is the base of the pydantic models users build by hand (`Route`,
  `Budget`): it forbids unknown keyword arguments, and turns a `ValidationError` into one
  `UserError` line per bad field, with the field's docstring as the expected form.
- `check_int`, `check_number`, `check_str`, `check_bool`, `check_mapping`,
  `check_callable` are for plain classes (`Agent`, the architectures, the critics,
  `jeeves.run`). `bool` is never accepted as a number: `max_turns=True` is a mistake.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from jeeves.errors import UserError, UserTypeError

__all__ = [
    "ConfigModel",
    "check_bool",
    "check_callable",
    "check_int",
    "check_mapping",
    "check_number",
    "check_str",
    "nests_deeper_than",
    "short_repr",
]


def nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether objects/arrays (dicts/lists) nest in parsed `value` more than `limit` levels
    (iterative, so a hostile document cannot exhaust the stack): JSON bodies and TOML files."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def short_repr(value: object, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters so an error message stays bounded."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bad_type(name: str, value: object, expected: str) -> UserTypeError:
    return UserTypeError(f"{name} must be {expected}, got {short_repr(value)} (type {type(value).__name__}).")


def check_int(value: object, *, name: str, minimum: int) -> int:
    """`value` if it is an int (not a bool) of at least `minimum`."""
    expected = f"an int >= {minimum}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad_type(name, value, expected)
    if value < minimum:
        raise UserError(f"{name} must be {expected}, got {value!r}.")
    return value


def check_number(
    value: object,
    *,
    name: str,
    minimum: float,
    maximum: float | None = None,
    above: bool = False,
) -> float:
    """`value` as a float if it is a finite int or float (not a bool) in range.

    `above=True` makes `minimum` exclusive (a timeout must be > 0).
    """
    low = f"> {minimum:g}" if above else f">= {minimum:g}"
    expected = f"a number {low}" + (f" and <= {maximum:g}" if maximum is not None else "")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad_type(name, value, expected)
    number = float(value)
    too_low = number <= minimum if above else number < minimum
    if not math.isfinite(number) or too_low or (maximum is not None and number > maximum):
        raise UserError(f"{name} must be {expected}, got {value!r}.")
    return number


def check_str(value: object, *, name: str, empty: bool = True) -> str:
    """`value` if it is a str (and, with `empty=False`, not blank)."""
    if not isinstance(value, str):
        raise _bad_type(name, value, "a str")
    if not empty and not value.strip():
        raise UserError(f"{name} must not be empty, got {value!r}; write some text.")
    return value


def check_bool(value: object, *, name: str) -> bool:
    """`value` if it is True or False (not 0, 1 or "yes")."""
    if not isinstance(value, bool):
        raise _bad_type(name, value, "True or False")
    return value


def check_mapping(value: object, *, name: str) -> dict[str, Any]:
    """A dict copy of `value` if it is a mapping with str keys; None gives {}."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad_type(name, value, "a dict (or None)")
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise UserTypeError(
            f"{name} keys must be str, got {short_repr(bad)}; pass e.g. {{'temperature': 0}}."
        )
    return dict(value)


def check_callable(value: object, *, name: str, expected: str) -> Callable[..., Any]:
    """`value` if it can be called; `expected` says what it should have been."""
    if not callable(value):
        raise _bad_type(name, value, expected)
    return value


class ConfigModel(BaseModel):
    """Base for pydantic models users construct: unknown or bad arguments are a UserError.

    The error lists every bad field at once, one line each: the argument as written,
    what is wrong, and the field's docstring (what it expects). Only construction is
    wrapped; `model_validate` on data read back from a file keeps pydantic's error.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)
    """`defer_build`: the validator is built at the first construction, not at import (so
    `import jeeves` builds none, and pydantic's plugin scan waits for the first use). The
    fields' docstrings are read from the source only when an error needs one
    (`field_doc`): pydantic's `use_attribute_docstrings` parses each class's source at
    import, a tenth of `import jeeves`."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _config_error(type(self), exc) from None


def field_doc(model: type, field: str) -> str:
    """The docstring written under `field` in `model`'s class body (or a base's), or ""."""
    for cls in model.__mro__:
        if cls is BaseModel:
            break
        doc = _attribute_docs(cls).get(field)
        if doc is not None:
            return doc
    return ""


@functools.cache
def _attribute_docs(cls: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # no source (built in a REPL, frozen): no docs
        return {}
    tree = ast.parse(source)
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _config_error(model: type[BaseModel], exc: ValidationError) -> UserError:
    owner = model.__name__
    lines = [_describe(model, error) for error in exc.errors()]
    wrong_type = all(e["type"].endswith("_type") for e in exc.errors())
    head = f"Invalid arguments for {owner}:" if len(lines) > 1 else f"Invalid argument for {owner}:"
    message = "\n".join(
        [head, *(f"  - {line}" for line in lines), f"Fix the call; see help(jeeves.{owner})."]
    )
    return (UserTypeError if wrong_type else UserError)(message)


def _describe(model: type[BaseModel], error: ErrorDetails) -> str:
    loc = error["loc"]
    field = str(loc[0]) if loc else ""
    if error["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields)
        return f"{field}= is not an argument of {model.__name__}; its arguments are: {known}."
    if error["type"] == "missing":
        return f"{field}= is required."
    problem = str(error["msg"]).removeprefix("Value error, ").replace("Input should be", "should be")
    problem = problem[:1].lower() + problem[1:]
    for words, sign in (("greater than or equal to", ">="), ("less than or equal to", "<=")):
        problem = problem.replace(words, sign)
    info = model.model_fields.get(field)
    text = (info.description or field_doc(model, field)) if info else ""
    summary = text.strip().split("\n")[0].split(". ")[0].rstrip(".")
    doc = f" ({field}: {summary})" if summary else ""
    where = field + "".join(f"[{part!r}]" for part in loc[1:])
    return f"{where}={short_repr(error.get('input'))}: {problem}{doc}."
