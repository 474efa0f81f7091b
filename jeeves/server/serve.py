"""Serving the app: `serve(app)` on a socket bound here (`jeeves serve` is `jeeves.cli.serve`).

The socket is bound here, before anything is printed, so a port in use is one error line
(a `UserError`), not a "serving" line followed by uvicorn's traceback. A server reachable
beyond loopback must have a token: `serve` refuses to start without one, and `jeeves serve`
generates one and prints the page's address with it.

Shutdown (SIGTERM, SIGINT) is bounded: when it begins every run still going is cancelled,
so followers get their `end` message; connections still busy `shutdown_s` later (an SSE
client that stopped reading, say) are dropped, and their responses end as for any client
that went away.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import secrets
import socket
from collections.abc import Sequence

from starlette.applications import Starlette

from jeeves.errors import UserError
from jeeves.server.runs import RunRegistry

__all__ = ["access", "address", "bind", "is_loopback", "serve"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: any free port).

    Raises:
        UserError: the port is not one (0 to 65535), is taken, or the address is not one of
            this machine's.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UserError(f"Port {port!r} is not a TCP port; give one from 1 to 65535 (0: any free port).")
    try:
        family, kind, proto, _, where = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UserError(
            f"Cannot resolve --host {host!r} ({exc.strerror}); give an address of this machine."
        ) from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: restart at once after a stop
        sock.bind(where)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"Port {port} on {host} is already in use (another server is listening there); "
                f"stop it or pick another port with --port."
            ) from exc
        raise UserError(f"Cannot listen on {host}:{port}: {exc.strerror}; check --host and --port.") from exc
    return sock


def access(
    sock: socket.socket, host: str, token: str | None, allowed_hosts: Sequence[str]
) -> tuple[str | None, bool, list[str]]:
    """Who may reach a server bound at `sock` (for `host`): its token (one generated when it
    listens beyond loopback without one), whether it was generated, and the Host names the
    guard allows (the given ones, plus the name given and the address it resolved to)."""
    generated = token is None and not is_loopback(sock)
    if generated:
        token = secrets.token_urlsafe(24)
    bound = sock.getsockname()[0]
    hosts = [*allowed_hosts]
    if not ipaddress.ip_address(bound).is_unspecified:
        hosts += [host, bound]
    return token, generated, hosts


def is_loopback(sock: socket.socket) -> bool:
    """Whether `sock` is bound to a loopback address (reachable from this machine only)."""
    return ipaddress.ip_address(sock.getsockname()[0]).is_loopback


def address(sock: socket.socket) -> str:
    """The URL a browser on this machine would use for `sock`."""
    host, port = sock.getsockname()[:2]
    if ipaddress.ip_address(host).is_unspecified:
        host = "127.0.0.1" if sock.family == socket.AF_INET else "::1"
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    app: Starlette,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    shutdown_s: int = 5,
    sock: socket.socket | None = None,
) -> None:
    """Run `app` with uvicorn until SIGTERM or SIGINT. Binds to localhost unless told otherwise.

    Args:
        app: A `create_app` app.
        host: The interface to bind; anything but loopback needs an app with a token.
        port: The port (0: any free one).
        log_level: uvicorn's log level.
        shutdown_s: Seconds responses get to finish once shutdown began; then their
            connections are dropped.
        sock: A socket already made with `bind` (then `host` and `port` are not used).

    Raises:
        UserError: the address cannot be bound, or it is not loopback and the app has no token.
    """
    if shutdown_s < 0:
        raise UserError(f"shutdown_s must be >= 0 seconds, got {shutdown_s!r}.")
    sock = sock or bind(host, port)
    try:
        if not is_loopback(sock) and getattr(app.state, "token", None) is None:
            raise UserError(
                f"Refusing to serve on {sock.getsockname()[0]} without a token: anyone who can "
                f"reach it could start runs on your keys; pass create_app(token=...) (or bind 127.0.0.1)."
            )
        _run(app, sock, log_level=log_level, shutdown_s=shutdown_s)
    finally:
        sock.close()


def _run(app: Starlette, sock: socket.socket, *, log_level: str, shutdown_s: int) -> None:
    import uvicorn  # the server's runtime dependency; imported here so `import jeeves.server` stays light

    runs: RunRegistry | None = getattr(app.state, "runs", None)

    class Server(uvicorn.Server):
        """uvicorn, cancelling the app's runs as soon as shutdown begins, and dropping the
        connections still busy `shutdown_s` later: a response blocked on a client that
        stops reading then sees a disconnect and ends as for any client that went away."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            if runs is not None:
                runs.cancel_all()
            # uvicorn runs on asyncio, and its connections are asyncio protocols.
            drop = asyncio.get_running_loop().call_later(shutdown_s, self.drop_connections)
            try:
                await super().shutdown(sockets)
            finally:
                drop.cancel()

        def drop_connections(self) -> None:
            for connection in list(self.server_state.connections):
                connection.transport.abort()

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=shutdown_s + 5,  # uvicorn's own last resort: cancel what is left
        lifespan="on",
    )
    try:
        Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it stopped on, once it has stopped
        pass
