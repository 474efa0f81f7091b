"""What the server refuses before any route runs: foreign hosts, cross-site writes, big bodies.

Trust model: the server runs on the user's machine and starts runs that spend the user's
provider keys. Any web page the user has open can send requests to it, and a DNS-rebinding
page can even make its requests look same-origin. So, before routing:

- `Host` must name this server: a loopback name (`localhost`, `127.0.0.1`, `[::1]`) or one
  the user allowed (`allowed_hosts`; `"*"` allows any). A rebinding page's requests carry
  its own host name, so they end here (400).
- A write (any method but GET, HEAD, OPTIONS) that carries an `Origin` must come from this
  server's own origin (the Origin's host and port are the request's `Host`) or from one of
  `allowed_origins` (the CORS origins); `Origin: null` is never allowed (403). Clients that
  are not browsers send no Origin and are not affected.
- A write with a body must say `Content-Type: application/json` (or `*/*+json`) (415).
  Browsers send a cross-origin `text/plain` POST without asking first; a JSON one needs a
  CORS preflight, which fails unless the origin is allowed.
- A body may hold at most `max_body_bytes` (413): a larger `Content-Length` is refused
  before anything is read, and a body streamed without one is refused as soon as it
  passes the limit. The body is read here, bounded, before routing does any work.

The token (see `BearerAuth` in `jeeves.server.app`) is checked after these rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jeeves.errors import UserError

__all__ = ["LOOPBACK_HOSTS", "RequestGuard", "host_names"]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""Host names a server on this machine always answers to."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _host_of(authority: str) -> str:
    """The host part of `host[:port]`, lower-cased: `[::1]:8000` → `[::1]`."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[: authority.find("]") + 1] or authority
    return authority.partition(":")[0]


def host_names(names: Sequence[str]) -> frozenset[str]:
    """The loopback names plus `names`, normalised (`::1` → `[::1]`); `"*"` stays as is.

    Raises:
        UserError: a name carries a scheme, a path or a port (give the bare host name).
    """
    out = set(LOOPBACK_HOSTS)
    for name in names:
        bare = name.strip().lower().rstrip(".")
        if ":" in bare and not bare.startswith("["):
            bare = f"[{bare}]" if bare.count(":") > 1 else bare
        if not bare or "/" in bare or " " in bare or _host_of(bare) != bare:
            raise UserError(
                f"Allowed host {name!r} is not a bare host name; give the name the browser uses, "
                f"without scheme or port, such as 'jeeves.internal' or '192.168.1.5'."
            )
        out.add(bare)
    return frozenset(out)


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class RequestGuard:
    """ASGI middleware enforcing the rules in the module docstring, outermost in the app."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: frozenset[str],
        allowed_origins: Sequence[str],
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self._hosts = allowed_hosts
        self._origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self._max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope["method"], headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] in _SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        body = await self._read_body(receive)
        if body is None:
            await _refuse(413, f"The request body is larger than {self._max_body} bytes.")(
                scope, receive, send
            )
            return
        await self.app(scope, _replay(body, receive), send)

    def _refusal(self, method: str, headers: Headers) -> JSONResponse | None:
        host = headers.get("host", "")
        if "*" not in self._hosts and _host_of(host) not in self._hosts:
            return _refuse(
                400,
                f"Host {host[:100]!r} is not a name this server answers to; "
                f"allow it with `jeeves serve --allow-host NAME` (create_app(allowed_hosts=...)).",
            )
        if method in _SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, host):
            return _refuse(
                403,
                f"Writes from origin {origin[:100]!r} are refused; a page on another origin may "
                f"call this server only if it is listed with --cors (create_app(cors_origins=...)).",
            )
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self._max_body):
            return _refuse(413, f"The request body is larger than {self._max_body} bytes.")
        has_body = length not in (None, "0") or "transfer-encoding" in headers
        if has_body and not _is_json(headers.get("content-type", "")):
            return _refuse(
                415,
                f"Send the body as JSON with `Content-Type: application/json`, "
                f"not {headers.get('content-type', '')[:100]!r}.",
            )
        return None

    def _origin_allowed(self, origin: str, host: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin in self._origins:
            return True
        scheme, sep, authority = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and authority == host.strip().lower()

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it passes the limit (the rest is never read)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)  # the client left; the route sees an empty body and a disconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands out the already-read body, then the client's next messages."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
