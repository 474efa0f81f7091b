"""Reading a spec's TOML safely, and a small TOML writer for what a spec holds.

`read_toml` is how every spec and critic file is read (`jeeves run`, `jeeves rejudge
--critic`, `jeeves serve`): a file that is not UTF-8, TOML that does not parse, or TOML
nested deeper than `MAX_DEPTH` (3,000 levels would exhaust the stack) is one `UserError`
naming the file, never a traceback.

The writer (the standard library only reads TOML): tables become `[a.b]` sections, arrays of tables `[[a.b]]`, and everything else a value:
strings (multi-line ones as `'''` or `\"\"\"` blocks, so prompts and code stay readable),
integers, floats, booleans, arrays and inline tables. `tomllib.loads(to_toml(d)) == d`
for every table `d` of those types; `None` has no TOML form and is refused.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jeeves._base.validate import nests_deeper_than
from jeeves.errors import UserError

__all__ = ["MAX_DEPTH", "read_toml", "to_toml"]

MAX_DEPTH = 32
"""How deep tables and arrays may nest in a spec or critic file (the deepest spec needs ~10)."""

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_INLINE_WIDTH = 100


def read_toml(path: str | Path, what: str = "spec") -> dict[str, Any]:
    """The top-level table of TOML file `path`; a `UserError` naming the file (a `what` file)
    when it cannot be read, is not UTF-8, is not TOML, or nests deeper than `MAX_DEPTH`."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise UserError(
            f"Cannot read {what} file {str(file)!r}: {exc.strerror or exc}; check the path."
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserError(
            f"{file}: not UTF-8 (byte {raw[exc.start]:#04x} on line {line}); save the {what} file as UTF-8."
        ) from None
    too_deep = UserError(
        f"{file}: tables or arrays nest deeper than {MAX_DEPTH} levels; no {what} needs that."
    )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{file}: not valid TOML: {exc}. Fix the syntax at that line.") from None
    except RecursionError:
        raise too_deep from None
    if nests_deeper_than(data, MAX_DEPTH):
        raise too_deep
    return data


def to_toml(data: Mapping[str, Any]) -> str:
    """`data` as TOML text: a document whose `tomllib.loads` is `data`."""
    lines: list[str] = []
    _section(lines, [], data, header=None)
    return "\n".join(lines).strip("\n") + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _section(lines: list[str], path: list[str], data: Mapping[str, Any], header: str | None) -> None:
    values = [(k, v) for k, v in data.items() if not _is_table(v) and not _is_table_array(v)]
    nested = [(k, v) for k, v in data.items() if _is_table(v) or _is_table_array(v)]
    if header is not None and (values or header.startswith("[[") or not nested):
        lines += ["", header]
    for key, value in values:
        lines.append(f"{_key(key)} = {_value(value, key)}")
    for key, value in nested:  # in the table's own order: the architecture before [models]
        sub = [*path, key]
        if _is_table(value):
            _section(lines, sub, value, header=f"[{_dotted(sub)}]")
        else:
            for item in value:
                _section(lines, sub, item, header=f"[[{_dotted(sub)}]]")


def _dotted(path: Sequence[str]) -> str:
    return ".".join(_key(p) for p in path)


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else _basic(key)


def _value(value: Any, where: str, *, inline: bool = False) -> str:
    if value is None:
        raise TypeError(f"TOML has no null: {where!r} is None; leave the key out instead.")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else repr(value))
    if isinstance(value, str):
        return _basic(value) if inline or "\n" not in value else _multiline(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(k)} = {_value(v, k, inline=True)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        items = [_value(v, where, inline=inline) for v in value]
        flat = "[" + ", ".join(items) + "]"
        if inline or (len(flat) <= _INLINE_WIDTH and "\n" not in flat):
            return flat
        return "[\n" + "".join(f"    {item},\n" for item in items) + "]"
    raise TypeError(f"{where!r} is {value!r}, which a spec cannot hold in TOML.")


def _basic(text: str) -> str:
    out = "".join(_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if _CONTROL.match(c) else c) for c in text)
    return f'"{out}"'


def _multiline(text: str) -> str:
    """A multi-line string: literal (`'''`, no escapes at all) when the text allows it."""
    if "'''" not in text and not text.endswith("'") and not _CONTROL.search(text) and "\r" not in text:
        return f"'''\n{text}'''"
    out = []
    for i, c in enumerate(text):
        if c == '"' and (i + 1 == len(text) or text[i + 1] == '"' or (i and text[i - 1] == '"')):
            out.append('\\"')  # never let quotes run into three, nor into the closing delimiter
        elif c in "\\\b\f\r" or _CONTROL.match(c):
            out.append(_ESCAPES.get(c) or f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"""\n' + "".join(out) + '"""'
