"""Loading a spec: TOML text → `Spec`, with errors that name the file, the key path and the problem.

pydantic reports where a value failed as a `loc` tuple that also holds the union tags it
tried (`("workers", "coder", "actor_critic", "max_rounds")`) and list indices. `key_path`
walks that tuple beside the data the user wrote, keeps the keys the user typed, and spells
them as one dotted path: `workers.coder.max_rounds`, `critic[1].timeout_s`.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from jeeves.errors import UserError
from jeeves.spec.models import (
    ARCHITECTURE_SPECS,
    CRITIC_SPECS,
    DemoSpec,
    ReplySpec,
    RouteSpec,
    Spec,
    ToolCallSpec,
)
from jeeves.spec.toml import read_toml

__all__ = ["TOP_LEVEL_TABLES", "format_errors", "join_key_path", "key_path", "load_spec", "parse_spec"]

TOP_LEVEL_TABLES = ("models", "demo", "approvals", "mcp")
"""Top-level tables that are not the root architecture's keys."""

MAX_LISTED = 10
"""The most problems one spec error lists (the rest are counted)."""

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_UNTYPED: tuple[type[BaseModel], ...] = (RouteSpec, DemoSpec, ReplySpec, ToolCallSpec)


def load_spec(path: str | Path) -> Spec:
    """Read and validate the spec file at `path`.

    Raises UserError naming the file for a file that cannot be read, TOML that does not
    parse (with its line and column), and every key that does not validate (with its
    dotted key path), together with what building the rest would find (see `parse_spec`). Test files named by `code` critics are read now, relative to the
    spec's directory.
    """
    file = Path(path)
    return parse_spec(read_toml(file, "spec"), path=file)


def parse_spec(data: Mapping[str, Any], *, path: str | Path | None = None) -> Spec:
    """A Spec from a spec file's top-level table (what `tomllib` reads, or `dump` returns).

    Relative paths in it resolve beside `path` (the current directory without one).
    When keys fail to validate, the rest is still built (its imports run) so the one
    UserError also lists the later problems: route and script keys no session uses, import
    paths that do not resolve.
    """
    where = str(path) if path is not None else "spec"
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: a spec is a table of keys, got {data!r}.")
    file = Path(path) if path is not None else None
    wrapped: dict[str, Any] = {
        "architecture": {k: v for k, v in data.items() if k not in TOP_LEVEL_TABLES},
        **{k: data[k] for k in TOP_LEVEL_TABLES if k in data},
    }
    context = {"base": file.resolve().parent if file else None}
    try:
        spec = Spec.model_validate(wrapped, context=context)
    except ValidationError as exc:
        later = _later_problems(wrapped, exc.errors(), context, file)
        raise UserError(format_errors(where, exc.errors(), wrapped, later=later)) from None
    spec.path = file
    return spec


def _later_problems(
    wrapped: dict[str, Any], errors: Sequence[ErrorDetails], context: dict[str, Any], file: Path | None
) -> list[str]:
    """The problems building would find once these keys are fixed, so one error lists both.

    Every key that failed is dropped (its default applies) and the rest is validated again
    and built: a misspelt key and a `[models]` key no session uses are reported together.
    Nothing is added when the rest cannot stand alone: a required key or a `type` is
    missing, or a `role` failed (the route keys would be checked against the wrong roles).
    """
    if len(errors) > MAX_LISTED:  # pruning is per error (linear each): with many, list these alone
        return []
    pruned = copy.deepcopy(wrapped)
    for error in errors:
        if error["type"] in ("missing", "union_tag_invalid", "union_tag_not_found"):
            return []
        parts, nodes = key_path(error["loc"], pruned)
        if parts[-1:] == ["role"] or not _drop(nodes):
            return []
    try:
        spec = Spec.model_validate(pruned, context=context)
    except ValidationError:
        return []
    spec.path = file
    from jeeves.spec.build import build_problems  # build imports this module

    return build_problems(spec)


_STAND_INS = {"tests": ("tests_source", "def test_stand_in():\n    pass\n")}
"""Keys whose table is incomplete without them, and what stands in while later problems are
sought (it is only validated and built, never run)."""


def _drop(nodes: list[Any]) -> bool:
    """Delete the last value `key_path` visited from its table (a list item: the whole list)."""
    for depth in range(len(nodes) - 1, 0, -1):
        parent, value = nodes[depth - 1], nodes[depth]
        if isinstance(parent, dict) and value is not None:
            key = next((k for k, v in parent.items() if v is value), None)
            if key is not None:
                del parent[key]
                if key in _STAND_INS:  # a key the table cannot do without: a harmless stand-in
                    parent.setdefault(*_STAND_INS[key])
                return True
            return False
    return False


def format_errors(where: str, errors: Sequence[ErrorDetails], data: Any, *, later: Sequence[str] = ()) -> str:
    """One message for the validation errors, each as `key.path: problem`, then `later`
    problems (from building what did validate), one per line: at most `MAX_LISTED` of them,
    then how many more (20,000 unknown keys are one short message, made in milliseconds)."""
    if len(errors) > MAX_LISTED and not later and all(e["type"] == "extra_forbidden" for e in errors):
        return _unknown_keys_line(where, errors, data)
    lines: dict[str, None] = {}
    for error in errors[: MAX_LISTED * 4]:  # duplicates collapse; a few spare, not thousands
        path, problem = _describe(error, data)
        lines[f"  - {path or '(top level)'}: {problem}"] = None
        if len(lines) == MAX_LISTED:
            break
    listed = [*lines, *(f"  - {line}" for line in later)]
    more = len(errors) - len(lines) if len(lines) == MAX_LISTED else 0
    total = len(listed) + more
    count = "a problem" if total == 1 else f"{total} problems"
    tail = [f"  - ... and {more} more (fix those above first)"] if more else []
    return (
        f"{where} has {count}:\n"
        + "\n".join(listed + tail)
        + "\nSee docs/specs.md for every key and its default."
    )


def _unknown_keys_line(where: str, errors: Sequence[ErrorDetails], data: Any) -> str:
    """Many unknown keys and nothing else (a generated or corrupted file): one line naming the
    first few and how many more."""
    named = [join_key_path(key_path(e["loc"], data)[0]) for e in errors[:3]]
    more = f" and {len(errors) - len(named)} more" if len(errors) > len(named) else ""
    return (
        f"{where} has {len(errors)} unknown keys ({', '.join(named)}{more}); "
        f"remove them (docs/specs.md lists every key and its default)."
    )


def _spell(part: str | int) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    return part if _BARE.fullmatch(part) else f'"{part}"'


def join_key_path(parts: Sequence[str | int]) -> str:
    """Keys as one path, the way TOML would write them: `workers.coder.critic[1]`, `models."a.b"`."""
    out = ""
    for part in parts:
        text = _spell(part)
        out += text if (isinstance(part, int) or not out) else "." + text
    return out


def key_path(loc: Sequence[str | int], data: Any) -> tuple[list[str | int], list[Any]]:
    """The keys the user wrote along `loc` (union tags and implied list wrappers dropped),
    and the data nodes visited, from `data` down (None past what the user wrote)."""
    parts: list[str | int] = []
    nodes = [data]
    tagged = False  # the union tag was skipped at this node: a key of the same name is a key
    for elem in loc:
        node = nodes[-1]
        if elem == "[key]":
            continue
        if isinstance(node, Mapping):
            if elem in node:
                parts.append(elem)
                nodes.append(node[elem])
                tagged = False
                continue
            if elem == 0:
                continue  # one table given where an array of tables is allowed
            if elem == node.get("type", "agent") and not tagged:
                tagged = True
                continue  # the union tag pydantic tried (`type = "goal"` has a `goal` key too)
            parts.append(elem)
            nodes.append(None)
        elif isinstance(node, list) and isinstance(elem, int) and 0 <= elem < len(node):
            parts.append(elem)
            nodes.append(node[elem])
        elif node is None:
            parts.append(elem)
            nodes.append(None)
    if parts[:1] == ["architecture"]:
        parts = parts[1:]
    return parts, nodes


def _describe(error: ErrorDetails, data: Any) -> tuple[str, str]:
    kind = error["type"]
    loc = error["loc"]
    ctx = error.get("ctx") or {}
    parts, nodes = key_path(loc, data)
    path = join_key_path(parts)
    if kind == "extra_forbidden":
        return path, "unknown key" + _suggest(str(loc[-1]), nodes[-2], top=len(parts) == 1)
    given = error.get("input")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = CRITIC_SPECS if ctx.get("discriminator") == "'type'" else ARCHITECTURE_SPECS
        expected = str(ctx.get("expected_tags") or ", ".join(repr(t) for t in tags))
        path = join_key_path([*parts, "type"])
        if kind == "union_tag_not_found":
            return path, f"missing; use one of {expected}"
        return path, f"unknown type {ctx.get('tag')!r}; use one of {expected}"
    if kind == "missing":
        return path, "required, but missing"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        if parts[-1:] == ["model"] or (len(parts) == 2 and parts[0] == "models"):
            return (
                path,
                f"should be a model string (e.g. 'openai/gpt-4o') or a route table, got {_short(given)}",
            )
        return path, f"should be a table, got {_short(given)}"
    message = str(error["msg"])
    if kind == "value_error":
        return path, message.removeprefix("Value error, ")
    message = message.replace("Input should be", "should be")
    return path, f"{message}, got {_short(given)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _fields(parent: Any, *, top: bool) -> set[str]:
    """The keys allowed where `parent` (a table the user wrote) sits, best guess by its keys."""
    if not isinstance(parent, Mapping):
        return set()
    kind = parent.get("type", "agent")
    found = ARCHITECTURE_SPECS.get(str(kind)) or CRITIC_SPECS.get(str(kind))
    if "type" in parent and found is not None:
        fields = set(found.model_fields)
    else:
        candidates = [ARCHITECTURE_SPECS["agent"], *_UNTYPED]
        overlapping = [m for m in candidates if any(f in parent for f in m.model_fields)]
        fields = set().union(*(m.model_fields for m in overlapping or candidates))
    return fields | set(TOP_LEVEL_TABLES) if top else fields


def _suggest(name: str, parent: Any, *, top: bool) -> str:
    known = _fields(parent, top=top)
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; the keys here are: {', '.join(sorted(known))}" if 0 < len(known) <= 20 else ""
