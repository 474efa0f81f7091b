"""Credentials in provider parameters: which keys hold one, and copies without them.

Provider parameters (an Agent's, a critic's, a route's) may carry an API key or an
`Authorization` header. The live call needs them; nothing else does. One rule, in
`is_credential`, says which keys hold a credential, and everything that turns parameters
into something kept or shown goes through `strip_credentials` (data that is stored or
hashed: a request's replay fingerprint and journal record, a spec recorded as a run's
source) or `mask_credentials` (text people read: reprs, replay diffs). Text that comes
from outside, a provider's error message, may quote a key it was sent: `scrub_error`
replaces the credential values of the call's parameters in it.

The rule looks at a key's name alone, never at its value. The name is split into words
(on `_`, `-`, `.`, spaces and camelCase humps, lower-cased) and holds a credential when:

- one of its words is `secret`, `secrets`, `password`, `passwd`, `passphrase`,
  `credential`, `credentials`, `authorization`, `cookie` or `apikey`
  (`client_secret`, `Proxy-Authorization`, `Set-Cookie`, `vertex_credentials`);
- its last word is `token` or `auth` (`token`, `access_token`, `X-Auth-Token`,
  `azure_ad_token`, `basic_auth`); plural `tokens` is a count, so `max_tokens` is not;
- the word `key` follows `api`, `access`, `secret`, `private`, `subscription`, `auth`,
  `master`, `account` or `session` (`api_key`, `X-API-Key`, `anthropic_api_key`,
  `aws_secret_access_key`, `aws_access_key_id`, `Ocp-Apim-Subscription-Key`);
  other keys are not credentials (`prompt_cache_key`, `idempotency_key`).

The rule applies at every depth of the parameters (`extra_headers`, `headers`,
`extra_body`), to keys of mappings. A mapping under a credential-named key is not
removed whole: its own keys are checked, so a nested structure keeps its shape.
Parameters without a credential come back equal to what was given, so their
fingerprints do not change.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "is_credential", "mask_credentials", "scrub", "scrub_error", "strip_credentials"]

REDACTED = "<redacted>"
"""What a credential's value reads as in reprs and diffs."""

_ANYWHERE = frozenset(
    {
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "credential",
        "credentials",
        "authorization",
        "cookie",
        "apikey",
    }
)
_LAST = frozenset({"token", "auth"})
_BEFORE_KEY = frozenset(
    {"api", "access", "secret", "private", "subscription", "auth", "master", "account", "session"}
)
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def _words(name: str) -> list[str]:
    return [w for w in _SEPARATORS.split(_HUMP.sub("_", name).lower()) if w]


def is_credential(name: object) -> bool:
    """Whether a parameter or header called `name` holds a credential (the module's rule)."""
    if not isinstance(name, str):
        return False
    words = _words(name)
    if not words:
        return False
    if _ANYWHERE.intersection(words) or words[-1] in _LAST:
        return True
    return any(
        word == "key" and before in _BEFORE_KEY for before, word in zip(words, words[1:], strict=False)
    )


def _walk(value: Any, replacement: object, drop: bool) -> Any:
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if is_credential(key) and not isinstance(item, Mapping):
                if not drop:
                    out[key] = replacement
                continue
            out[key] = _walk(item, replacement, drop)
        return out
    if isinstance(value, list):
        return [_walk(item, replacement, drop) for item in value]
    if isinstance(value, tuple):
        return tuple(_walk(item, replacement, drop) for item in value)
    return value


def strip_credentials(value: Any) -> Any:
    """A copy of `value` without its credentials, for what is stored or hashed.

    Mappings come back as plain dicts, lists as lists and tuples as tuples, at every
    depth; other values are returned as they are.
    """
    return _walk(value, None, drop=True)


def mask_credentials(value: Any) -> Any:
    """A copy of `value` with each credential's value read as `REDACTED`, for text people read."""
    return _walk(value, REDACTED, drop=False)


MIN_QUOTED = 8
"""Credential values shorter than this are not searched for in error text: a placeholder key
such as `"x"` would otherwise blank out every `x` of a message."""


def _values(value: Any, under_credential: bool = False) -> list[str]:
    if isinstance(value, Mapping):
        return [v for k, item in value.items() for v in _values(item, under_credential or is_credential(k))]
    if isinstance(value, list | tuple):
        return [v for item in value for v in _values(item, under_credential)]
    if under_credential and isinstance(value, str):
        return [value, *value.split()]  # "Bearer sk-…" is quoted whole or as its token
    return []


def scrub(text: str, params: Any) -> str:
    """`text` with every credential value found in `params` replaced by `REDACTED`.

    For messages that come from outside (a provider's error can quote the key it was sent,
    or a URL holding it); values shorter than `MIN_QUOTED` characters are left alone.
    """
    for secret in sorted({v for v in _values(params) if len(v) >= MIN_QUOTED}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def scrub_error(error: BaseException, params: Any) -> None:
    """Scrub, in place, the text of `error` and of the exceptions chained to it.

    What `str(error)` shows is in its text arguments for jeeves' errors and most others, and
    in a `message` attribute for litellm's and the OpenAI SDK's; a traceback (a span's
    `exception.stacktrace`) prints the whole `__cause__` / `__context__` chain. Events,
    journals and spans built from the error then hold no credential of `params`.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and isinstance(current, Exception):
        seen.add(id(current))
        current.args = tuple(scrub(a, params) if isinstance(a, str) else a for a in current.args)
        message = getattr(current, "message", None)
        if isinstance(message, str):
            with contextlib.suppress(AttributeError, TypeError):
                current.message = scrub(message, params)  # type: ignore[attr-defined]
        current = current.__cause__ or current.__context__
