"""Tests are offline: no real model call and no connection beyond this machine, unless marked `live`.

An autouse fixture (`tests/conftest.py`) puts every test under `guard(test)`. While a test
that is not marked `live` runs:

- litellm's completion entry points refuse a call that is not aimed at a loopback server
  (an `api_base`, or the provider's `*_API_BASE` variable, on 127.0.0.1 or localhost, as the
  fake providers in `tests/models` are) and is not litellm's own `mock_response`;
- a socket may connect only to a loopback address or a Unix socket, and a host name other
  than `localhost` is not resolved.

The refusal is `RealCallRefused`, naming the test and saying to mark it live. Code that
catches every exception (a retry, a provider error mapping) cannot hide it: the test is
failed at teardown as well. Subprocesses are not guarded; they are offline by their
environment (`offline_env()` removes every provider key).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

LITELLM_ENTRY_POINTS = (
    "completion",
    "acompletion",
    "text_completion",
    "atext_completion",
    "responses",
    "aresponses",
    "embedding",
    "aembedding",
)
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class RealCallRefused(ConnectionError):
    """A test that is not marked `live` tried to reach a real model or a host beyond this machine."""


class _Guard:
    """Which test runs now (None: a live test, or none), and what it was refused."""

    test: str | None = None
    refused: list[str] = []


def refuse(what: str) -> RealCallRefused:
    """Record a refusal for the running test and return the error to raise."""
    message = (
        f"{_Guard.test} {what}: tests make no real model call and reach no outside host; "
        "use ScriptedModel, FunctionModel or a fake server on 127.0.0.1, or mark it live "
        "(@pytest.mark.live)"
    )
    _Guard.refused.append(message)
    return RealCallRefused(message)


def is_local_host(host: str) -> bool:
    """A loopback address, the unspecified address (which connects to this machine) or `localhost`."""
    host = host.strip("[]").lower()
    if host in LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def is_local_url(url: object) -> bool:
    return isinstance(url, str) and is_local_host(urlsplit(url).hostname or "")


def _allowed_address(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # a Unix socket's path
        return True
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return is_local_host(address[0])
    return True  # other families (netlink, ...) are not the network


def _guard_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        if _Guard.test is not None and not _allowed_address(address):
            raise refuse(f"connected to {address!r}")
        return original(self, address)

    return connect


def _guard_getaddrinfo(original: Callable[..., Any]) -> Callable[..., Any]:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if _Guard.test is not None and isinstance(host, (str, bytes)) and host:
            name = host.decode() if isinstance(host, bytes) else host
            if not is_local_host(name) and not _is_address(name):
                raise refuse(f"looked up the host {name!r}")
        return original(host, *args, **kwargs)

    return getaddrinfo


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _aimed_here(kwargs: dict[str, Any]) -> bool:
    """litellm's own mock, or a base URL on this machine: given, or from the provider's
    environment variable (`OPENAI_API_BASE=http://127.0.0.1:...`)."""
    if "mock_response" in kwargs:
        return True
    model = str(kwargs.get("model", ""))
    provider = (model.split("/", 1)[0] if "/" in model else "openai").upper()
    bases = [kwargs.get("api_base"), kwargs.get("base_url")]
    bases += [os.environ.get(f"{provider}_API_BASE"), os.environ.get(f"{provider}_BASE_URL")]
    return any(is_local_url(base) for base in bases)


def _guard_litellm_call(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if _Guard.test is not None and not _aimed_here(kwargs):
            raise refuse(f"called litellm.{name}({kwargs.get('model', '')!r}) on a real provider")
        return original(*args, **kwargs)

    call.__wrapped__ = original  # type: ignore[attr-defined]
    call._offline_guard = True  # type: ignore[attr-defined]
    return call


def install_litellm_guard() -> None:
    """Wrap litellm's completion entry points once litellm is loaded (it loads lazily)."""
    litellm = sys.modules.get("litellm")
    if litellm is None or getattr(litellm, "_offline_guard", False):
        return
    for name in LITELLM_ENTRY_POINTS:
        original = getattr(litellm, name, None)
        if callable(original):
            setattr(litellm, name, _guard_litellm_call(name, original))
    litellm._offline_guard = True


def install_socket_guard() -> None:
    """Wrap socket connects and host lookups, once per process."""
    if getattr(socket, "_offline_guard", False):
        return
    socket.socket.connect = _guard_connect(socket.socket.connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guard_connect(socket.socket.connect_ex)  # type: ignore[method-assign]
    socket.getaddrinfo = _guard_getaddrinfo(socket.getaddrinfo)
    socket._offline_guard = True  # type: ignore[attr-defined]


@contextmanager
def guard(test: str, *, live: bool) -> Iterator[list[str]]:
    """Run one test offline (unless `live`); yields the list of what it was refused."""
    install_socket_guard()
    install_litellm_guard()
    _Guard.test, _Guard.refused = (None if live else test), []
    try:
        yield _Guard.refused
    finally:
        install_litellm_guard()  # loaded during this test: guarded from the next one on
        _Guard.test = None


def forgive() -> list[str]:
    """Clear the running test's refusals and return them (for the test that proves the guard)."""
    refused, _Guard.refused[:] = list(_Guard.refused), []
    return refused
