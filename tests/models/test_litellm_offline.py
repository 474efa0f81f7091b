"""litellm fetches nothing at call time: jeeves sets its offline switches unless the user did."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

from jeeves.models._litellm_loading import OFFLINE_SWITCHES
from tests.conftest import subprocess_env
from tests.models.fake_anthropic import FakeAnthropic
from tests.models.fake_server import Reply, serve


def test_every_local_switch_in_the_installed_litellm_is_set() -> None:
    spec = find_spec("litellm")
    assert spec is not None and spec.origin is not None
    names: set[str] = set()
    for path in Path(spec.origin).parent.rglob("*.py"):
        names.update(re.findall(r"LITELLM_LOCAL_[A-Z_]+", path.read_text(encoding="utf-8", errors="replace")))
    assert names, "litellm has no LITELLM_LOCAL_* switches any more: see what replaced them"
    assert names <= set(OFFLINE_SWITCHES), f"set these too: {sorted(names - set(OFFLINE_SWITCHES))}"


class Trap:
    """A TCP listener standing in for an HTTP proxy: it counts whoever connects."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.connections += 1
            conn.close()


@pytest.fixture
def trap() -> Iterator[Trap]:
    trap = Trap()
    yield trap
    trap.sock.close()


CALL = """
import os, anyio
from jeeves.messages import Message, ModelRequest
from jeeves.models.litellm import LiteLLMClient

async def main() -> None:
    client = LiteLLMClient(api_base=os.environ["FAKE_BASE"], api_key="k")
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}  # a beta feature's header
    request = ModelRequest(messages=[Message.user("hi")], model="anthropic/claude-sonnet-4-5", output_schema=schema)
    response = await client.complete(request)
    print(response.text)
    print(*(f"{n}={os.environ[n]}" for n in sorted(os.environ) if n.startswith("LITELLM_LOCAL_")))

anyio.run(main)
"""


def test_an_anthropic_call_reaches_the_provider_and_nothing_else(trap: Trap) -> None:
    """Every other host goes through a proxy that is a trap: a price map or beta-header
    download at import or call time would connect to it."""
    env = {k: v for k, v in subprocess_env().items() if not k.startswith("LITELLM_LOCAL_")}
    env |= {"HTTP_PROXY": trap.url, "HTTPS_PROXY": trap.url, "ALL_PROXY": trap.url}
    env |= {"NO_PROXY": "127.0.0.1,localhost", "LITELLM_LOCAL_BLOG_POSTS": "False"}  # the user's own choice
    with serve(FakeAnthropic()) as fake:
        fake.script(Reply("Hello from the fake."))
        env["FAKE_BASE"] = fake.base_url
        done = subprocess.run(
            [sys.executable, "-c", CALL], env=env, capture_output=True, text=True, timeout=180
        )
    assert done.returncode == 0, done.stderr
    text, switches = done.stdout.splitlines()
    assert text == "Hello from the fake."
    assert trap.connections == 0, f"litellm fetched something besides the provider: {done.stderr[-2000:]}"
    assert "Failed to fetch" not in done.stderr
    assert "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS=True" in switches
    assert "LITELLM_LOCAL_MODEL_COST_MAP=True" in switches
    assert "LITELLM_LOCAL_BLOG_POSTS=False" in switches, "a switch the user set is left alone"
