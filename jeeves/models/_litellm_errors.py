"""litellm's exceptions as jeeves errors: the one place that knows litellm's exception classes.

```
timeout anywhere in the chain (ours, litellm's, httpx's)  -> ModelTimeout (retried)
429                                                       -> RateLimited (retried, Retry-After kept)
a 200 that is not a chat completion (HTML, no choices)    -> BadResponse (retried)
401 / 403                                                 -> InvalidCredentials (a MissingCredentials)
other 4xx                                                 -> ProviderError, not retried
5xx, connection errors, anything else                     -> ProviderError, retried
no key found before or by the provider's client          -> MissingCredentials, naming the variable
```
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from jeeves.errors import (
    BadResponse,
    InvalidCredentials,
    MissingCredentials,
    ModelError,
    ModelTimeout,
    ProviderError,
    RateLimited,
)
from jeeves.models._litellm_loading import litellm_module

__all__ = ["check_credentials", "credentials_error", "map_litellm_error", "provider_message", "unreadable"]


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


_UNREADABLE = (
    "returned 'choices'",  # older litellm
    "with no 'choices'",  # litellm 1.110: "provider returned a response with no 'choices'"
    "'choices' that is not a list",
    "Empty or invalid response from LLM endpoint",
    "Stream ended before a finish_reason was received",  # litellm 1.110, a cut stream
)
"""How litellm says a reply was not a chat completion (it calls that a 500, an APIError,
or, for a stream cut before its finish reason, a MidStreamFallbackError)."""


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

_TAIL = re.compile(
    r"\s*(?:Traceback \(most recent call last\)|This looks like a bug in LiteLLM|Original exception:"
    r"|LiteLLM Retried:|Received Model Group|Available Model Group Fallbacks).*",
    re.S,
)
"""Where litellm's additions to a provider's message begin: a traceback, a bug-report link,
the wrapped exception again, its router's notes. Everything from there is dropped."""
_WRAPPER = re.compile(r"^(?:litellm\.\w+:\s*|\w+(?:Error|Exception):\s*|\w+Exception\s*-\s*)+")
"""litellm's class-name prefixes ("litellm.RateLimitError: AnthropicException - ")."""
_PATH = re.compile(r'(?:File\s+)?"?(?:[A-Za-z]:)?(?:[\\/][\w.@+-]+)+\.pyc?"?(?:,\s*line\s+\d+)?')
"""A source file's path (and line), as a traceback shows it: never part of a message."""


def _from_json(text: str) -> str:
    """The `message` inside a provider's JSON error body (or its bytes' repr), when `text` is one."""
    if text[:2] in ("b'", 'b"') and text[-1:] == text[1]:
        text = text[2:-1]
    try:
        body = json.loads(text)
    except ValueError:
        return text
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return message if isinstance(message, str) and message.strip() else text


def provider_message(exc: BaseException) -> str:
    """The provider's own message in `exc`, in one line: no traceback, no file paths, no
    litellm wrapper prefixes, at most `_DETAIL_CHARS` characters; the exception's class
    name when nothing is left. The full text stays on the exception (`__cause__`)."""
    text = str(getattr(exc, "message", None) or exc)
    text = _PATH.sub("", _TAIL.sub("", text))
    text = _from_json(_WRAPPER.sub("", text.strip()).strip())
    detail = " ".join(text.split()) or type(exc).__name__
    return detail if len(detail) <= _DETAIL_CHARS else f"{detail[: _DETAIL_CHARS - 1]}…"


_detail = provider_message


def unreadable(model: str, what: str) -> BadResponse:
    advice = "if it persists, check that `api_base` serves this provider's API"
    return BadResponse(f"Model {model!r} sent {what}; {advice}.", model=model)


_PARSE_ERRORS = (AttributeError, IndexError, KeyError, TypeError, ValueError)
"""What litellm's own code raises on a reply of a shape it did not expect."""


def _unparsed(exc: BaseException) -> BaseException | None:
    """The parse error in a failure raised while reading a reply (a stream's chunk), if any.

    litellm reports its adapter tripping over a reply (an Anthropic stream whose `usage`
    is null: "'NoneType' object is not a mapping") as an APIConnectionError; the reply
    was the problem, so it is a retried BadResponse, not the provider's failure.
    """
    return next((e for e in _chain(exc) if isinstance(e, _PARSE_ERRORS)), None)


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
        provider = str(litellm_module().get_llm_provider(model)[1])
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


def _unwrapped(exc: BaseException, lm: Any) -> BaseException:
    """The provider's error inside litellm's MidStreamFallbackError (newer litellm).

    litellm wraps whatever failed mid-stream (a 429, a 5xx, a cut stream) in that one
    class, a 503 for its own router's fallbacks; what it wraps says what happened.
    """
    wrapper = getattr(lm.exceptions, "MidStreamFallbackError", None)
    inner = getattr(exc, "original_exception", None)
    if wrapper is not None and isinstance(exc, wrapper) and isinstance(inner, BaseException):
        return inner
    return exc


def map_litellm_error(
    exc: BaseException, model: str, *, timeout_s: float | None = None, reading: bool = False
) -> ModelError | InvalidCredentials:
    """Translate an exception from litellm into the jeeves error the retry logic understands.

    Classes are checked most specific first. A timeout anywhere in the chain (`timeout_s`,
    the limit that applied, goes in its message) is a ModelTimeout. A 200 whose body is
    not JSON or has no choices is a BadResponse, although litellm calls it a 500. A 401 or
    403 is InvalidCredentials, a setup problem that is not retried. Other 4xx errors
    become ProviderErrors that are not retried; anything not recognised is a retryable
    ProviderError with no status. The caller chains `exc`.
    """
    lm = litellm_module()
    exc = _unwrapped(exc, lm)
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
        return unreadable(model, f"a reply that could not be read ({detail})")
    unparsed = _unparsed(exc) if reading and status in (None, 500, 503) else None
    if unparsed is not None:
        return unreadable(model, f"a streamed reply litellm could not parse ({provider_message(unparsed)})")
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


_NO_KEY = re.compile(r"missing credentials|missing \w+ api key|api_key client option must be set", re.I)
"""How provider clients (the OpenAI SDK, litellm's own) say no key was found, before any request."""


def _missing_keys(model: str) -> list[str]:
    """The `*_API_KEY` variables litellm wants for `model` and cannot find.

    Only `*_API_KEY` variables count: litellm also lists settings that have defaults or
    other sources (OLLAMA_API_BASE; AWS_ACCESS_KEY_ID under an instance role).
    """
    try:
        wanted = litellm_module().validate_environment(model=model)["missing_keys"]
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
    return bool(kwargs.get("api_key") or litellm_module().api_key)


def check_credentials(kwargs: dict[str, Any]) -> None:
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


def credentials_error(exc: BaseException, kwargs: dict[str, Any]) -> MissingCredentials | None:
    """MissingCredentials when the call failed because no key was found (not an HTTP error).

    litellm reports the OpenAI SDK's "Missing credentials" as an InternalServerError, which
    would be retried and blamed on the provider; it is a setup problem like a missing key
    found before the call.
    """
    if _has_key(kwargs) or not any(_NO_KEY.search(str(e)) for e in _chain(exc)):
        return None
    missing = _missing_keys(kwargs["model"])
    return _needs_key(kwargs, missing) if missing else None
