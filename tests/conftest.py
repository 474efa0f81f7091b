"""Shared test settings: every async test runs on asyncio and on trio unless it says otherwise.

Tests that need asyncio only (anything touching litellm, uvicorn or a browser) mark
themselves with `pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import offline
from tests.postgres import postgres_cluster, postgres_url  # noqa: F401  (fixtures for every folder)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def offline_unless_live(request: pytest.FixtureRequest) -> Iterator[None]:
    """No real model call and no outside host in a test not marked `live` (tests/offline.py)."""
    live = request.node.get_closest_marker("live") is not None
    with offline.guard(request.node.nodeid, live=live) as refused:
        yield
    if refused:
        pytest.fail("\n".join(refused), pytrace=False)


@pytest.fixture
def repo_root() -> Path:
    return REPO


def subprocess_env() -> dict[str, str]:
    """An environment for `python -c` subprocesses that import this checkout of jeeves."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def crash_child(module: str, *args: str) -> subprocess.Popen[str]:
    """`python -m MODULE ARGS` from this checkout, to be SIGKILLed mid-run: its stdin is held
    open by the test, so a child that reaches its hang (`tests.waiting.hang_until_killed`)
    waits on it until killed; stdout and stderr are pipes the test reads lines from."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=subprocess_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def offline_env() -> dict[str, str]:
    """`subprocess_env()` with every provider key removed: offline means offline."""
    return {k: v for k, v in subprocess_env().items() if not k.endswith("_API_KEY")}


def jeeves_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`python -m jeeves ARGS` as a user types it, from the repository root; offline (no
    provider key in the environment) unless `env` says otherwise."""
    return subprocess.run(
        [sys.executable, "-m", "jeeves", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=offline_env() if env is None else env,
        timeout=300,
    )


def wait_for_line(child: subprocess.Popen[str], marker: str, timeout: float = 120) -> None:
    """Read the child's stdout until a line holding `marker`: the child says it got there.

    Fails with the child's stderr if it ends first, or after `timeout` seconds. The rest of
    its output stays in the pipe for `communicate()`.
    """
    assert child.stdout is not None, "start the child with stdout=subprocess.PIPE"
    found, ended = threading.Event(), threading.Event()

    def read() -> None:
        try:
            for line in child.stdout:  # type: ignore[union-attr]
                if marker in line:
                    found.set()
                    return
        finally:
            ended.set()

    threading.Thread(target=read, daemon=True).start()
    assert ended.wait(timeout), f"the child never printed {marker!r} in {timeout} s"
    assert found.is_set(), f"the child ended before printing {marker!r}: {child.communicate()[1]}"


@contextmanager
def jeeves_serve(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[str]:
    """`python -m jeeves serve ARGS --port 0` (from the repository, or `cwd`); yields its base
    URL once it prints its `serving ... at URL` line.

    On leaving, the server gets SIGINT and must exit cleanly (code 0).
    """
    errors = tempfile.TemporaryFile(mode="w+")  # never a pipe nobody reads while it runs
    server = subprocess.Popen(
        [sys.executable, "-m", "jeeves", "serve", *args, "--port", "0"],
        cwd=cwd or REPO,
        env=env or subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    try:
        assert server.stdout is not None
        lines: list[str] = []
        port = None
        for line in server.stdout:
            lines.append(line)
            found = re.search(r"serving .* at http://127\.0\.0\.1:(\d+)/", line)
            if found:
                port = int(found.group(1))
                break
        assert port, f"jeeves serve did not report its address: {''.join(lines)}"
        yield f"http://127.0.0.1:{port}"
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
        errors.seek(0)
        err = errors.read()
        errors.close()
    assert server.returncode == 0, err
