"""An MCP tool result as the text the model reads, bounded.

Text content is passed as is; other content is described in one line (an image is not
inlined as base64 into a text conversation); structured content is shown as JSON when
the result has no text. A result longer than the server's `max_result_chars` is cut, with
a notice saying how much was cut, so one tool cannot flood the conversation or the journal.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["render_result", "truncate"]


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind}: {block.mime_type}, {size} bytes, not shown]"
    if kind == "resource_link":
        return (
            f"[resource link: {block.uri}"
            + (f" ({block.name})" if getattr(block, "name", None) else "")
            + "]"
        )
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        return f"[resource {resource.uri}: {resource.mime_type or 'binary'}, not shown]"
    return f"[{kind or type(block).__name__} content, not shown]"


def render_result(content: list[Any], structured: Any) -> str:
    """The text of a tool result's content blocks (structured content when there are none)."""
    parts = [_block(b) for b in content]
    if not parts and structured is not None:
        return json.dumps(structured, ensure_ascii=False, sort_keys=True)
    return "\n".join(parts)


def truncate(text: str, limit: int, where: str) -> str:
    """`text` cut to `limit` characters with a notice naming `where` it came from."""
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[truncated: {where} returned {len(text)} characters; only the first {limit} are "
        f"shown (max_result_chars={limit}). Ask for less, e.g. a narrower range.]"
    )
