"""Reading a request's JSON body: the one helper every JSON route uses.

A body the guard let through (`jeeves.server.guard`: JSON content type, at most
`max_body_bytes`) can still be hostile: bytes that are not UTF-8, text that is not JSON,
JSON nested so deep that parsing or validating it would exhaust the stack (2 KB is
enough for 1,000 levels), or a string holding a lone UTF-16 surrogate (`"\ud800"`: JSON
may escape one, but it is no character, so no journal, event stream or response could
encode the run that carried it). Each is a 400 with a one-line message (`BadJson`), never a
500, and nothing of the body is kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request

from jeeves._base.validate import nests_deeper_than
from jeeves.errors import UserError

__all__ = ["MAX_JSON_DEPTH", "BadJson", "invalid_body", "parse_json", "read_json"]

MAX_JSON_DEPTH = 64
"""How deep arrays and objects may nest in a request body (jeeves' own bodies need 6)."""


class BadJson(UserError):
    """The request body is not JSON jeeves accepts (HTTP 400)."""


def parse_json(body: bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """`body` parsed as JSON, or `BadJson` saying what is wrong with it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJson(
            f"The request body is not UTF-8 ({exc.reason} at byte {exc.start}); send JSON text."
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJson(f"The request body is not JSON: {exc}.") from None
    except RecursionError:
        raise BadJson(
            f"The request body nests arrays/objects deeper than {limit} levels; send a flatter body."
        ) from None
    if nests_deeper_than(value, limit):
        raise BadJson(
            f"The request body nests arrays/objects deeper than {limit} levels; send a flatter body."
        )
    if _SURROGATE_ESCAPE.search(text) and (where := _lone_surrogate(value)) is not None:
        raise BadJson(
            f"The request body's {where} holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF "
            f"escape), which is not a character; send valid Unicode."
        )
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""What a body spelling a surrogate holds: bodies without it (nearly all) are not walked."""


def _lone_surrogate(value: Any) -> str | None:
    """Where in `value` (a parsed body) a string holds a lone surrogate, as a JSON path
    (`$.messages[0].text`); None when none does. A pair escaped in the body (`\\ud83d\\ude00`)
    was read as its one character, so it encodes."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not _encodes(key):
                    return f"{path} key {ascii(key[:40])}"
                step = f".{key}" if key.isidentifier() and len(key) <= 40 else f"[{ascii(key[:40])}]"
                stack.append((path + step, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
        elif isinstance(item, str) and not _encodes(item):
            return path
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def read_json(request: Request) -> Any:
    """The request's body as JSON (see `parse_json`)."""
    return parse_json(await request.body())


def invalid_body(exc: ValidationError, most: int = 5) -> str:
    """A body that parsed but does not fit its route's model, in one line: each field and
    what is wrong with it (at most `most` of them), never the values sent back (a field may
    hold megabytes) nor pydantic's links."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {' '.join(e['msg'].split())}" for e in errors[:most]
    ]
    more = f"; and {len(errors) - most} more" if len(errors) > most else ""
    return f"Invalid request body: {'; '.join(parts)}{more}."
