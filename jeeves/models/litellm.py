"""The litellm adapter: `LiteLLMClient`, the `ModelClient` behind every model string.

litellm is imported on the first call, not with this module, so `import jeeves` stays
fast and works offline. The import takes seconds, so a call makes it in a worker thread
(`load_litellm`): the event loop keeps serving other runs and streams meanwhile, and
concurrent first calls wait for one import, not one each. `preload()` starts it early (in
the background) for a server that will make live calls. Before importing it,
`LITELLM_LOCAL_MODEL_COST_MAP` defaults to `True`, so litellm prices calls from its
bundled price map instead of downloading one.

Every attempt has a finite timeout (`request.timeout_s`, from the route; 120 s by
default): it goes to litellm, and jeeves enforces it too, around the call and around each
streamed chunk, so a server that hangs or a stream that stops sending fails as a
retryable `ModelTimeout` however litellm's own timeouts behave. A reply that cannot be the
model's answer (an HTML page, no choices, a stream closed before its finish reason) is a
retryable `BadResponse`, and a refused key (401/403) is `InvalidCredentials`.

Retries belong to the route (`jeeves.models.fallback`), so litellm's own retries and the
OpenAI SDK's are switched off (`num_retries=0`, `max_retries=0`): one attempt here is one
HTTP request. Every exception litellm raises is translated by `map_litellm_error`, the
only place that knows litellm's exception classes, except a key that was never found,
which is `MissingCredentials` however litellm reports it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import re
import threading
from typing import Any

import anyio

from jeeves.errors import (
    BadResponse,
    InvalidCredentials,
    MissingCredentials,
    ModelError,
    ModelTimeout,
    ProviderError,
    RateLimited,
)
from jeeves.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from jeeves.models.base import DEFAULT_TIMEOUT_S, DeltaSink

__all__ = ["LiteLLMClient", "load_litellm", "map_litellm_error", "preload"]

_SHAPE_ERRORS = (AttributeError, IndexError, KeyError, TypeError, ValueError)
"""What reading a reply of the wrong shape raises; it becomes BadResponse."""


_loaded: list[Any] = []
"""litellm once imported (empty until then); `_import_lock` makes the import happen once."""
_import_lock = threading.Lock()


def _litellm() -> Any:
    """litellm, imported once, offline-safe, with its "Give Feedback" banner off (we report errors).

    This blocks for the import the first time: on the event loop, call `load_litellm()`
    first. The lock makes threads that ask at once (concurrent first calls, `preload`)
    share one import; later calls only read `_loaded`.
    """
    if not _loaded:
        with _import_lock:
            if not _loaded:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                _warm(litellm)
                _loaded.append(litellm)
    return _loaded[0]


def _warm(litellm: Any) -> None:
    """Load now what litellm and the OpenAI SDK otherwise load during the first call.

    `import litellm` defers much of itself: the first call imports hundreds more modules
    (the OpenAI SDK's resources, the tokenizer, the service logger), seconds on a busy
    machine, on whichever thread makes it, so on the event loop. Doing it here keeps it in
    the importing thread. Best effort, offline: a step that fails only means the first call
    loads that part itself.
    """
    _no_mcp_hook()  # finding the module imports its parents
    hello = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    steps = (
        lambda: list(litellm.completion(**hello, mock_response="hi", stream=True)),  # tokenizer, logging
        lambda: importlib.import_module("openai").AsyncOpenAI(api_key="unused").chat.completions,
        lambda: importlib.import_module("litellm._service_logger"),
    )
    for step in steps:
        try:
            step()
        except Exception:  # an optional speed-up: the real call reports real errors
            continue


async def load_litellm() -> Any:
    """litellm, without blocking the event loop: the first time, imported in a worker thread.

    Works on asyncio and trio. A caller cancelled while it waits leaves at once; the import
    goes on in its thread and serves the next call.
    """
    if _loaded:
        return _loaded[0]
    return await anyio.to_thread.run_sync(_litellm, abandon_on_cancel=True)


def preload() -> threading.Thread:
    """Start importing litellm in a background (daemon) thread and return at once.

    For a process that will make live calls (`jeeves serve` with live routes): the first
    call then finds litellm loaded, or waits only for the rest of the one import.
    """
    thread = threading.Thread(target=_litellm, name="jeeves-litellm-preload", daemon=True)
    thread.start()
    return thread


@functools.cache
def _no_mcp_hook() -> dict[str, bool]:
    """Turn off litellm's MCP gateway hook, where this litellm has one.

    The hook runs on every call with tools and imports the optional `mcp` package, so
    without it every tool call fails. jeeves sends only function tools, which the hook
    leaves alone anyway; litellm versions that have the hook accept `_skip_mcp_handler`.
    `_litellm` looks it up right after the import, in the importing thread.
    """
    found = importlib.util.find_spec("litellm.responses.mcp.chat_completions_handler") is not None
    return {"_skip_mcp_handler": True} if found else {}


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and everything it was raised from (litellm also keeps causes in `original_exception`)."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is not None and all(item is not seen for seen in found):
            found.append(item)
            todo += [item.__cause__, item.__context__, getattr(item, "original_exception", None)]
    return found


_UNREADABLE = ("returned 'choices'", "Empty or invalid response from LLM endpoint")
"""How litellm says a 200's body was not a chat completion (it calls that a 500)."""


def _malformed(exc: BaseException) -> bool:
    """litellm reports an unreadable body as a 500; the error it came from says what it was."""
    return any(
        isinstance(e, json.JSONDecodeError) or any(text in str(e) for text in _UNREADABLE)
        for e in _chain(exc)
    )


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms` or `retry-after`), if it said."""
    response = getattr(exc, "response", None)
    for headers in (getattr(exc, "litellm_response_headers", None), getattr(response, "headers", None)):
        for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
            try:
                return float(headers[name]) / scale  # type: ignore[index]
            except (KeyError, TypeError, ValueError):  # absent, no headers, or an HTTP date
                continue
    return None


_DETAIL_CHARS = 300
"""How much of a provider's error text a message quotes (an HTML error page can be long)."""


def _detail(exc: BaseException) -> str:
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return detail if len(detail) <= _DETAIL_CHARS else f"{detail[: _DETAIL_CHARS - 1]}…"


def _unreadable(model: str, what: str) -> BadResponse:
    advice = "if it persists, check that `api_base` serves this model's OpenAI-style API"
    return BadResponse(f"Model {model!r} sent {what}; {advice}.", model=model)


def _timed_out(model: str, timeout_s: float | None) -> ModelTimeout:
    waited = f"sent nothing for {timeout_s:g} s" if timeout_s else "did not answer in time"
    advice = "raise the route's `timeout_s` if the model needs longer, or add a fallback"
    return ModelTimeout(f"Model {model!r} {waited}; {advice}.", model=model)


def _is_timeout(exc: BaseException, lm: Any) -> bool:
    """A timeout anywhere in the chain: ours, litellm's, the OpenAI SDK's or httpx's."""
    import httpx  # litellm's HTTP client, loaded with it

    kinds = (lm.Timeout, TimeoutError, httpx.TimeoutException)
    return any(isinstance(e, kinds) for e in _chain(exc))


def _key_variable(model: str) -> str:
    """The environment variable the provider of `model` reads its key from (`OPENAI_API_KEY`)."""
    try:
        provider = str(_litellm().get_llm_provider(model)[1])
    except Exception:  # a model string litellm cannot place: name it from its prefix
        provider = model.split("/", 1)[0] if "/" in model else "openai"
    return f"{provider.upper().replace('-', '_')}_API_KEY"


def _refused(exc: BaseException, model: str, status: int | None) -> InvalidCredentials:
    var = _key_variable(model)
    return InvalidCredentials(
        f"Model {model!r} refused the API key ({status or 'auth'}: {_detail(exc)}); check {var} "
        f"(or the api_key given to the route) and its access to this model.",
        env_var=var,
        status_code=status,
    )


def map_litellm_error(
    exc: BaseException, model: str, *, timeout_s: float | None = None
) -> ModelError | InvalidCredentials:
    """Translate an exception from litellm into the jeeves error the retry logic understands.

    Classes are checked most specific first. A timeout anywhere in the chain (`timeout_s`,
    the limit that applied, goes in its message) is a ModelTimeout. A 200 whose body is
    not JSON or has no choices is a BadResponse, although litellm calls it a 500. A 401 or
    403 is InvalidCredentials, a setup problem that is not retried. Other 4xx errors
    become ProviderErrors that are not retried; anything not recognised is a retryable
    ProviderError with no status. The caller chains `exc`.
    """
    lm = _litellm()
    code = getattr(exc, "status_code", None)
    status = code if isinstance(code, int) else None
    detail = _detail(exc)
    if _is_timeout(exc, lm):
        return _timed_out(model, timeout_s)
    if isinstance(exc, lm.RateLimitError):
        error = RateLimited(
            f"Model {model!r} is rate limited ({detail}); wait or add fallbacks.", model=model
        )
        error.status_code, error.retry_after = status, _retry_after(exc)  # type: ignore[attr-defined]
        return error
    if _malformed(exc) or isinstance(exc, lm.APIResponseValidationError):
        return _unreadable(model, f"a reply that could not be read ({detail})")
    if isinstance(exc, lm.AuthenticationError | lm.PermissionDeniedError) or status in (401, 403):
        return _refused(exc, model, status)
    if isinstance(exc, lm.ContextWindowExceededError):
        hint = "shorten the conversation or use a model with a larger context window"
    elif isinstance(exc, lm.BadRequestError | lm.NotFoundError | lm.UnprocessableEntityError):
        hint = "check the model name and the request's params"
    elif isinstance(exc, lm.ServiceUnavailableError | lm.InternalServerError | lm.BadGatewayError):
        hint = "the provider failed; retry later or add a fallback"
    elif isinstance(exc, lm.APIConnectionError | lm.APIError):
        hint = "the provider could not be reached or failed; check `api_base` and the network"
    else:
        hint, status = "litellm raised an error jeeves does not classify; see the chained exception", None
    return ProviderError(f"Model {model!r} failed ({detail}); {hint}.", model=model, status_code=status)


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


_NO_KEY = re.compile(r"missing credentials|missing \w+ api key|api_key client option must be set", re.I)
"""How provider clients (the OpenAI SDK, litellm's own) say no key was found, before any request."""


def _missing_keys(model: str) -> list[str]:
    """The `*_API_KEY` variables litellm wants for `model` and cannot find.

    Only `*_API_KEY` variables count: litellm also lists settings that have defaults or
    other sources (OLLAMA_API_BASE; AWS_ACCESS_KEY_ID under an instance role).
    """
    try:
        wanted = _litellm().validate_environment(model=model)["missing_keys"]
    except Exception:  # litellm could not tell; the call itself will find out
        return []
    return sorted(key for key in wanted if key.endswith("_API_KEY"))


def _needs_key(kwargs: dict[str, Any], missing: list[str]) -> MissingCredentials:
    """MissingCredentials naming `missing`; it says a key is needed even when the server is elsewhere."""
    bases = [f"{key.removesuffix('_API_KEY')}{end}" for key in missing for end in ("_API_BASE", "_BASE_URL")]
    elsewhere = bool(kwargs.get("api_base")) or any(os.environ.get(name) for name in bases)
    note = " (a key is sent to a custom api_base too; any value will do for a server that checks none)"
    return MissingCredentials(
        f"Model {kwargs['model']!r} needs {' or '.join(missing)} set in the environment"
        f"{note if elsewhere else ''}; set it, or pass api_key= to LiteLLMClient.",
        env_var=missing[0],
    )


def _has_key(kwargs: dict[str, Any]) -> bool:
    return bool(kwargs.get("api_key") or _litellm().api_key)


def _check_credentials(kwargs: dict[str, Any]) -> None:
    """Name a missing key variable now, rather than after a round trip that ends in a 401.

    A key given to the call, or set as `litellm.api_key`, skips the check, and so does an
    `api_base`: a server of one's own may need no key. If its client wants one anyway,
    `_credentials_error` names the variable when the call fails.
    """
    if _has_key(kwargs) or kwargs.get("api_base"):
        return
    missing = _missing_keys(kwargs["model"])
    if missing:
        raise _needs_key(kwargs, missing)


def _credentials_error(exc: BaseException, kwargs: dict[str, Any]) -> MissingCredentials | None:
    """MissingCredentials when the call failed because no key was found (not an HTTP error).

    litellm reports the OpenAI SDK's "Missing credentials" as an InternalServerError, which
    would be retried and blamed on the provider; it is a setup problem like a missing key
    found before the call.
    """
    if _has_key(kwargs) or not any(_NO_KEY.search(str(e)) for e in _chain(exc)):
        return None
    missing = _missing_keys(kwargs["model"])
    return _needs_key(kwargs, missing) if missing else None


def _usage(usage: Any, model: str) -> Usage:
    """Tokens from litellm's usage object, and their USD price (0.0 for a model litellm cannot price)."""
    if usage is None:
        return Usage(model_calls=1)
    try:
        cost = float(sum(_litellm().cost_per_token(model=model, usage_object=usage)))
    except Exception:  # not in litellm's price map: an unpriced call costs nothing, it is not an error
        cost = 0.0
    tokens = {"input_tokens": usage.prompt_tokens or 0, "output_tokens": usage.completion_tokens or 0}
    return Usage(**tokens, model_calls=1, cost_usd=cost)


def _tool_call(index: int, id: str | None, name: str, arguments: str | None) -> ToolCall:
    return ToolCall(id=id or f"call_{index}", name=name, arguments=arguments or "{}")


def _from_completion(raw: Any, model: str) -> ModelResponse:
    try:
        if not raw.choices:
            raise _unreadable(model, "a reply with no choices")
        choice = raw.choices[0]
        calls = [
            _tool_call(i, c.id, c.function.name, c.function.arguments)
            for i, c in enumerate(choice.message.tool_calls or [])
        ]
        text, finish, usage = choice.message.content or "", choice.finish_reason, getattr(raw, "usage", None)
    except _SHAPE_ERRORS as exc:
        raise _unreadable(model, f"a reply of an unexpected shape ({exc!r})") from exc
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
        raise _unreadable(model, f"a streamed chunk of an unexpected shape ({exc!r})") from exc


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
                raise map_litellm_error(exc, model, timeout_s=timeout_s) from exc
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
        raise _unreadable(model, f"a stream that ended before its finish reason, after {got}")
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
            kwargs.update(_no_mcp_hook())
        return {**kwargs, "model": request.model, "messages": messages, "num_retries": 0, "max_retries": 0}

    def _timeout_s(self, request: ModelRequest) -> float:
        given = (request.params.get("timeout"), request.timeout_s, self._defaults.get("timeout"))
        return float(next((t for t in given if t is not None), DEFAULT_TIMEOUT_S))

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        """Send the request; with `on_delta`, stream its text there as it arrives."""
        litellm = await load_litellm()
        kwargs = self._kwargs(request)
        timeout_s = kwargs["timeout"] = self._timeout_s(request)
        _check_credentials(kwargs)
        if on_delta is not None:
            kwargs.update(stream=True, stream_options={"include_usage": True})
        try:
            with anyio.fail_after(timeout_s):  # streamed: until the reply's headers
                raw = await litellm.acompletion(**kwargs)
        except Exception as exc:
            mapped = map_litellm_error(exc, request.model, timeout_s=timeout_s)
            raise _credentials_error(exc, kwargs) or mapped from exc
        if on_delta is None:
            return _from_completion(raw, request.model)
        return await _from_stream(raw, request.model, on_delta, timeout_s)
