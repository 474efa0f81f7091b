"""`serve` and `jeeves serve` as real processes: binding, the token beyond loopback, shutdown."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from jeeves.errors import UserError
from jeeves.server import create_app, serve
from tests.conftest import REPO, jeeves_cli, offline_env
from tests.server.conftest import Blocked


@contextmanager
def process(*argv: str) -> Iterator[subprocess.Popen[str]]:
    """A Python subprocess in the repository, killed if the test leaves it running."""
    proc = subprocess.Popen(
        [sys.executable, *argv],
        cwd=REPO,
        env=offline_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def served_url(proc: subprocess.Popen[str]) -> tuple[str, list[str]]:
    """The base URL from the `jeeves: serving ... at URL` line, and the lines read up to it."""
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        found = re.search(r"serving .* at (http://127\.0\.0\.1:\d+)/", line)
        if found:
            return found.group(1), lines
    raise AssertionError(f"the server did not say where it serves: {lines!r}")


def stuck_follower(base: str, session_id: str) -> socket.socket:
    """An SSE client that reads the response head and then never reads again."""
    host, port = base.removeprefix("http://").split(":")
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.connect((host, int(port)))
    client.sendall(f"GET /runs/{session_id}/events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += client.recv(1024)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    return client


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_although_a_follower_is_stuck(sig: signal.Signals) -> None:
    with process("-m", "tests.server.flood", "1") as server:
        base, _ = served_url(server)
        started = httpx.post(f"{base}/runs", json={"architecture": "flood", "task": "x"}, timeout=30)
        client = stuck_follower(base, started.json()["session_id"])
        try:
            server.send_signal(sig)
            code = server.wait(timeout=60)  # a hang guard: it stops after about a second
        finally:
            client.close()
        _, err = server.communicate(timeout=30)
    assert code in (0, -sig), err
    assert "Traceback" not in err


def test_a_taken_port_is_one_error_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = jeeves_cli("serve", "--port", str(port))
    assert result.returncode == 2
    assert "serving" not in result.stdout
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"Port {port} on 127.0.0.1 is already in use" in result.stderr and "--port" in result.stderr


@pytest.mark.parametrize("port", [65536, 70000, -1])
def test_a_port_out_of_range_is_one_error_line_and_nothing_is_bound(port: int) -> None:
    from jeeves.server.serve import bind

    with pytest.raises(
        UserError, match=rf"^Port {port} is not a TCP port; give one from 1 to 65535 \(0: any free port\)\.$"
    ):
        bind("127.0.0.1", port)  # 70000 bound 4464 (70000 - 65536) before, 65536 any free port


def test_serve_refuses_an_address_beyond_loopback_without_a_token() -> None:
    with pytest.raises(UserError, match="without a token"):
        serve(create_app({"blocked": Blocked()}), host="0.0.0.0", port=0)


def test_jeeves_serve_beyond_loopback_generates_a_token_and_prints_the_page_with_it() -> None:
    with process("-m", "jeeves", "serve", "--host", "0.0.0.0", "--port", "0") as server:
        base, lines = served_url(server)
        assert server.stdout is not None
        lines.append(server.stdout.readline())
        found = re.search(r"open (http://\S+)#token=(\S+)", lines[-1])
        assert found, lines
        page, token = found.groups()
        anonymous = httpx.get(f"{base}/architectures", timeout=30)
        authorised = httpx.get(
            f"{base}/architectures", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        viewer = httpx.get(page, timeout=30)
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    assert "(token required)" in lines[0]
    assert page == f"{base}/" and len(token) >= 32
    assert anonymous.status_code == 401 and authorised.json() == {"architectures": ["demo"]}
    assert viewer.status_code == 200
    assert server.returncode == 0
