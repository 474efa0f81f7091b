"""The litellm adapter: `LiteLLMClient`, the `ModelClient` behind every model string.

litellm is imported on the first call, not with this module, so `import jeeves` stays
fast and works offline; the import takes seconds, so a call makes it in a worker thread,
one import for concurrent first calls (`load_litellm`, `preload`: `_litellm_loading`).
Before importing it, litellm's `LITELLM_LOCAL_*` switches (`OFFLINE_SWITCHES`) default to
`True`, so litellm reads its bundled price map and Anthropic beta headers instead of
downloading them: a call reaches the provider and nothing else.

Every attempt has a finite timeout (`request.timeout_s`, from the route; 120 s by
default): it goes to litellm, and jeeves enforces it too, around the call and around each
streamed chunk, so a server that hangs or a stream that stops sending fails as a
retryable `ModelTimeout` however litellm's own timeouts behave. A reply that cannot be the
model's answer (an HTML page, no choices, a stream closed before its finish reason) is a
retryable `BadResponse`, and a refused key (401/403) is `InvalidCredentials`.

Retries belong to the route (`jeeves.models.fallback`), so litellm's own retries and the
OpenAI SDK's are switched off (`num_retries=0`, `max_retries=0`): one attempt here is one
HTTP request. Every exception litellm raises is translated by `map_litellm_error`
(`_litellm_errors`), the only place that knows litellm's exception classes, except a key
that was never found, which is `MissingCredentials` however litellm reports it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from jeeves.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from jeeves.models._litellm_errors import check_credentials, credentials_error, map_litellm_error, unreadable
from jeeves.models._litellm_loading import litellm_module as _litellm
from jeeves.models._litellm_loading import load_litellm, no_mcp_hook, preload
from jeeves.models.base import DEFAULT_TIMEOUT_S, DeltaSink

__all__ = ["LiteLLMClient", "load_litellm", "map_litellm_error", "preload"]

_SHAPE_ERRORS = (AttributeError, IndexError, KeyError, TypeError, ValueError)
"""What reading a reply of the wrong shape raises; it becomes BadResponse."""


def _message(message: Message) -> dict[str, Any]:
    """One message in the OpenAI chat format, which litellm takes for every provider."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.content is None and not message.tool_calls:
        out["content"] = ""  # only an assistant's tool-call turn may have no content
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role == "tool":
        out.update(tool_call_id=message.tool_call_id, name=message.name)
    return out


def _ask_for_json(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """For models without native structured output: put the schema in the system message."""
    note = f"Reply with only a JSON object that matches this JSON schema, nothing else:\n{json.dumps(schema)}"
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{note}".lstrip()}, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def _supports_schema(model: str) -> bool:
    try:
        return bool(_litellm().supports_response_schema(model=model))
    except Exception:  # some litellm versions raise for unknown models: no native support then
        return False


def price_usd(model: str, usage: Any) -> float | None:
    """The USD price of `usage` on `model` from litellm's price map (or a map the user
    registered: docs/concepts/routing.md); None when litellm has no price for the model."""
    try:
        return float(sum(_litellm().cost_per_token(model=model, usage_object=usage)))
    except Exception:  # not in the price map: the cost is unknown, not zero
        return None


def _usage(usage: Any, model: str) -> Usage:
    """Tokens from litellm's usage object, and their USD price (None: litellm has no price)."""
    cost = None if usage is None else price_usd(model, usage)
    if usage is None:
        return Usage(model_calls=1, cost_usd=cost)
    tokens = {"input_tokens": usage.prompt_tokens or 0, "output_tokens": usage.completion_tokens or 0}
    return Usage(**tokens, model_calls=1, cost_usd=cost)


def _tool_call(index: int, id: str | None, name: str, arguments: str | None) -> ToolCall:
    return ToolCall(id=id or f"call_{index}", name=name, arguments=arguments or "{}")


def _from_completion(raw: Any, model: str) -> ModelResponse:
    try:
        if not raw.choices:
            raise unreadable(model, "a reply with no choices")
        choice = raw.choices[0]
        calls = [
            _tool_call(i, c.id, c.function.name, c.function.arguments)
            for i, c in enumerate(choice.message.tool_calls or [])
        ]
        text, finish, usage = choice.message.content or "", choice.finish_reason, getattr(raw, "usage", None)
    except _SHAPE_ERRORS as exc:
        raise unreadable(model, f"a reply of an unexpected shape ({exc!r})") from exc
    return ModelResponse(
        text=text, tool_calls=calls, usage=_usage(usage, model), model=model, finish_reason=finish
    )


def _read_chunk(chunk: Any, calls: dict[int, dict[str, str]], model: str) -> tuple[str, str | None]:
    """A chunk's text and finish reason; its tool-call pieces are merged into `calls` by index."""
    try:
        if not chunk.choices:
            return "", None
        choice = chunk.choices[0]
        for delta in choice.delta.tool_calls or []:
            call = calls.setdefault(delta.index or 0, {"id": "", "name": "", "arguments": ""})
            call["id"] = call["id"] or delta.id or ""
            call["name"] = call["name"] or delta.function.name or ""
            call["arguments"] += delta.function.arguments or ""
        return choice.delta.content or "", choice.finish_reason
    except _SHAPE_ERRORS as exc:
        raise unreadable(model, f"a streamed chunk of an unexpected shape ({exc!r})") from exc


def _finished(stream: Any, finish: str | None) -> bool:
    """Whether the provider sent a finish reason. litellm's stream wrapper puts "stop" on
    its last chunk when the provider sent none, and keeps what it really got apart."""
    if hasattr(stream, "received_finish_reason"):
        return bool(stream.received_finish_reason or getattr(stream, "intermittent_finish_reason", None))
    return finish is not None


async def _from_stream(stream: Any, model: str, on_delta: DeltaSink, timeout_s: float) -> ModelResponse:
    """Read a litellm stream: text to `on_delta` as it comes, usage from the last chunk.

    Only pulling the next chunk runs litellm's code, so only that is translated (and timed:
    no chunk within `timeout_s` is a ModelTimeout); errors from `on_delta`, and
    cancellation, pass through untouched. A stream that ends without a finish reason was
    cut off (a dropped connection, a proxy's page instead of events): a BadResponse, never
    a short answer. The stream is closed, shielded from cancellation, however we leave, so
    its connection goes back to the pool.
    """
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage: Any = None
    finish: str | None = None
    try:
        while True:
            try:
                with anyio.fail_after(timeout_s):
                    chunk = await anext(stream)
            except StopAsyncIteration:
                break
            except Exception as exc:
                raise map_litellm_error(exc, model, timeout_s=timeout_s, reading=True) from exc
            usage = getattr(chunk, "usage", None) or usage
            piece, chunk_finish = _read_chunk(chunk, calls, model)
            finish = chunk_finish or finish
            if piece:
                text.append(piece)
                await on_delta(piece)
    finally:
        with anyio.CancelScope(shield=True):
            if hasattr(stream, "aclose"):
                await stream.aclose()
    if not _finished(stream, finish):
        got = f"{sum(map(len, text))} characters" + (f" and {len(calls)} tool call(s)" if calls else "")
        raise unreadable(model, f"a stream that ended before its finish reason, after {got}")
    tool_calls = [_tool_call(i, c["id"], c["name"], c["arguments"]) for i, c in sorted(calls.items())]
    joined, usage_out = "".join(text), _usage(usage, model)
    return ModelResponse(
        text=joined, tool_calls=tool_calls, usage=usage_out, model=model, finish_reason=finish
    )


class LiteLLMClient:
    """A `ModelClient` that sends each request through `litellm.acompletion`.

    `request.model` is the litellm model string ("openai/gpt-4o-mini"); `request.params`
    (temperature, max_tokens…) go to litellm as keyword arguments and win over the
    constructor's defaults. `api_base`, `api_key` and `**kwargs` are sent with every call.

    Each call waits at most a timeout for the provider (for the reply; streamed, for each
    chunk): a `timeout` in `request.params`, else `request.timeout_s` (the route's), else
    the constructor's `timeout`, else `DEFAULT_TIMEOUT_S`. It is sent to litellm and
    enforced here as well. When neither `api_key` nor `api_base` is given, a missing `*_API_KEY`
    variable raises `MissingCredentials` before any network is touched; with an
    `api_base`, it is raised if the provider's client refuses to call without a key.
    """

    def __init__(
        self,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        given = {"api_base": api_base, "api_key": api_key, "timeout": timeout}
        self._defaults: dict[str, Any] = {k: v for k, v in given.items() if v is not None} | kwargs

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {**self._defaults, **request.params}
        messages = [_message(m) for m in request.messages]
        schema = request.output_schema
        if schema is not None and _supports_schema(request.model):
            spec = {"name": request.output_name or "output", "schema": schema, "strict": False}
            kwargs["response_format"] = {"type": "json_schema", "json_schema": spec}
        elif schema is not None:
            messages = _ask_for_json(messages, schema)
        if request.tools:
            kwargs["tools"] = [{"type": "function", "function": t.model_dump()} for t in request.tools]
            kwargs.update(no_mcp_hook())
        return {**kwargs, "model": request.model, "messages": messages, "num_retries": 0, "max_retries": 0}

    def _timeout_s(self, request: ModelRequest) -> float:
        given = (request.params.get("timeout"), request.timeout_s, self._defaults.get("timeout"))
        return float(next((t for t in given if t is not None), DEFAULT_TIMEOUT_S))

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        """Send the request; with `on_delta`, stream its text there as it arrives."""
        litellm = await load_litellm()
        kwargs = self._kwargs(request)
        timeout_s = kwargs["timeout"] = self._timeout_s(request)
        check_credentials(kwargs)
        if on_delta is not None:
            kwargs.update(stream=True, stream_options={"include_usage": True})
        try:
            with anyio.fail_after(timeout_s):  # streamed: until the reply's headers
                raw = await litellm.acompletion(**kwargs)
        except Exception as exc:
            mapped = map_litellm_error(exc, request.model, timeout_s=timeout_s)
            raise credentials_error(exc, kwargs) or mapped from exc
        if on_delta is None:
            return _from_completion(raw, request.model)
        return await _from_stream(raw, request.model, on_delta, timeout_s)
