"""The offline guard (tests/offline.py) refuses real calls in tests not marked live, and only those."""

from __future__ import annotations

import importlib
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests import offline

OUTSIDE = "203.0.113.7"  # TEST-NET-3: documentation only, never routed


@pytest.fixture
def refusals() -> Iterator[list[str]]:
    """What the guard refused during the test; cleared so the refusals do not fail it."""
    seen: list[str] = []
    yield seen
    seen.extend(offline.forgive())


def test_a_connection_beyond_this_machine_is_refused_naming_the_test(
    request: pytest.FixtureRequest, refusals: list[str]
) -> None:
    with pytest.raises(offline.RealCallRefused) as refused:
        socket.create_connection((OUTSIDE, 443), timeout=0.1)
    assert request.node.nodeid in str(refused.value)
    assert "mark it live" in str(refused.value)


def test_a_real_host_name_is_not_even_looked_up(refusals: list[str]) -> None:
    with pytest.raises(httpx.ConnectError, match=r"looked up the host .api\.openai\.com.*mark it live"):
        httpx.get("https://api.openai.com/v1/models")


def test_a_refusal_the_code_swallowed_still_fails_the_test(
    request: pytest.FixtureRequest, refusals: list[str]
) -> None:
    try:  # as a retry loop or a provider SDK would
        socket.create_connection((OUTSIDE, 443), timeout=0.1)
    except OSError:
        pass
    assert offline._Guard.refused, "the fixture fails a test with refusals at teardown"
    assert all(request.node.nodeid in message for message in offline._Guard.refused)


def test_litellm_refuses_a_real_provider_and_serves_its_own_mock(refusals: list[str]) -> None:
    litellm = importlib.import_module("litellm")
    offline.install_litellm_guard()  # done by the fixture for every test once litellm is loaded
    hello = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(offline.RealCallRefused, match=r"called litellm\.completion\('openai/gpt-4o-mini'\)"):
        litellm.completion(**hello)
    assert litellm.completion(**hello, mock_response="hello").choices[0].message.content == "hello"


def test_loopback_and_unix_sockets_are_allowed(tmp_path: object) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        accepted = threading.Event()

        def accept() -> None:
            server.accept()[0].close()
            accepted.set()

        thread = threading.Thread(target=accept)
        thread.start()
        socket.create_connection(("localhost", port), timeout=5).close()
        assert accepted.wait(5)
        thread.join(5)


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True), ("0.0.0.0", True)]
    + [("10.0.0.1", False), (OUTSIDE, False), ("api.openai.com", False)],
)
def test_what_counts_as_this_machine(host: str, local: bool) -> None:
    assert offline.is_local_host(host) is local


@pytest.mark.live
def test_a_live_test_is_not_guarded() -> None:
    assert offline._Guard.test is None
