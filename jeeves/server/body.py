"""Reading a request's JSON body: the one helper every JSON route uses.

A body the guard let through (`jeeves.server.guard`: JSON content type, at most
`max_body_bytes`) can still be hostile: bytes that are not UTF-8, text that is not JSON,
or JSON nested so deep that parsing or validating it would exhaust the stack (2 KB is
enough for 1,000 levels). Each is a 400 with a one-line message (`BadJson`), never a 500.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from jeeves._base.validate import nests_deeper_than
from jeeves.errors import UserError

__all__ = ["MAX_JSON_DEPTH", "BadJson", "parse_json", "read_json"]

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
    return value


async def read_json(request: Request) -> Any:
    """The request's body as JSON (see `parse_json`)."""
    return parse_json(await request.body())
