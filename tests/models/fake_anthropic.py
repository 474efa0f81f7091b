"""A fake Anthropic Messages API on 127.0.0.1, written from Anthropic's public API reference.

`POST /v1/messages` answers a whole `message` (content blocks `text` and `tool_use`,
`stop_reason`, `usage`), or, for `"stream": true`, the server-sent event sequence
`message_start` (the message, no content, input usage), then per block
`content_block_start`, `content_block_delta` (`text_delta`, or `input_json_delta` carrying
a piece of the tool input's JSON), `content_block_stop`, then `message_delta` (the stop
reason and output usage) and `message_stop`; a `ping` comes after the first block starts.
Errors are `{"type": "error", "error": {"type": ..., "message": ...}}`.

`Reply(usage=False)` streams without the usage objects in `message_start` and
`message_delta`, as some Anthropic-compatible servers do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.models.fake_server import Error, FakeProvider, Reply, Seen, sse_event

_WORDS = re.compile(r"\s*\S+\s*")
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    text = [{"type": "text", "text": reply.text}] if reply.text else []
    calls = [
        {"type": "tool_use", "id": f"toolu_{i:02d}", "name": name, "input": arguments}
        for i, (name, arguments) in enumerate(reply.calls)
    ]
    return text + calls


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.calls else "end_turn"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FakeAnthropic(FakeProvider):
    paths = ("/v1/messages",)

    def error_body(self, error: Error) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(error.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": error.message}}

    def whole(self, reply: Reply, seen: Seen) -> dict[str, Any]:
        return {
            "id": "msg_fake01",
            "type": "message",
            "role": "assistant",
            "model": seen.body.get("model", ""),
            "content": _blocks(reply),
            "stop_reason": _stop_reason(reply),
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }

    def stream(self, reply: Reply, seen: Seen) -> Iterator[str]:
        start = {**self.whole(Reply(), seen), "content": [], "stop_reason": None}
        start["usage"] = {"input_tokens": reply.input_tokens, "output_tokens": 1}
        if not reply.usage:
            del start["usage"]
        yield sse_event({"type": "message_start", "message": start}, "message_start")
        for index, block in enumerate(_blocks(reply)):
            yield from self._block(index, block)
        delta: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": _stop_reason(reply)}}
        delta["delta"]["stop_sequence"] = None
        if reply.usage:
            delta["usage"] = {"output_tokens": reply.output_tokens}
        yield sse_event(delta, "message_delta")
        yield sse_event({"type": "message_stop"}, "message_stop")

    def _block(self, index: int, block: dict[str, Any]) -> Iterator[str]:
        opened = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
        yield sse_event(
            {"type": "content_block_start", "index": index, "content_block": opened}, "content_block_start"
        )
        if index == 0:
            yield sse_event({"type": "ping"}, "ping")
        if block["type"] == "text":
            deltas = [{"type": "text_delta", "text": word} for word in _WORDS.findall(block["text"])]
        else:
            arguments = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, 7)]
        for delta in deltas:
            yield sse_event(
                {"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"
            )
        yield sse_event({"type": "content_block_stop", "index": index}, "content_block_stop")
