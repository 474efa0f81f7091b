"""A fake Gemini API on 127.0.0.1, written from Google's public Gemini API reference.

`POST /models/{model}:generateContent` answers one `GenerateContentResponse`: `candidates`
(each a `content` of role `model` whose `parts` are `text` or `functionCall` {name, args},
with a `finishReason`) and `usageMetadata` (`promptTokenCount`, `candidatesTokenCount`,
`totalTokenCount`). `:streamGenerateContent?alt=sse` sends the same objects as server-sent
events, one `data:` line each: text in pieces, the function calls, and the last one with
the `finishReason` and `usageMetadata`; the stream's end is the end of the answer (no
`[DONE]`). Errors are `{"error": {"code", "message", "status"}}`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tests.models.fake_server import Error, FakeProvider, Reply, Seen, sse_event

_WORDS = re.compile(r"\s*\S+\s*")
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
}


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": reply.input_tokens + reply.output_tokens,
    }


def _response(parts: list[dict[str, Any]], finish: str | None, model: str) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model}


def _model(seen: Seen) -> str:
    return seen.path.rsplit("/", 1)[-1].split(":", 1)[0]


class FakeGemini(FakeProvider):
    paths = ("/{rest:path}",)

    def error_body(self, error: Error) -> dict[str, Any]:
        status = _STATUS.get(error.status, "INTERNAL")
        return {"error": {"code": error.status, "message": error.message, "status": status}}

    def whole(self, reply: Reply, seen: Seen) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        parts += [{"functionCall": {"name": name, "args": args}} for name, args in reply.calls]
        return {**_response(parts, "STOP", _model(seen)), "usageMetadata": _usage(reply)}

    def stream(self, reply: Reply, seen: Seen) -> Iterator[str]:
        model = _model(seen)
        for word in _WORDS.findall(reply.text):
            yield sse_event(_response([{"text": word}], None, model))
        calls = [{"functionCall": {"name": name, "args": args}} for name, args in reply.calls]
        last = _response(calls, "STOP", model)
        if reply.usage:
            last["usageMetadata"] = _usage(reply)
        yield sse_event(last)
