"""Shared test settings: every async test runs on asyncio and on trio unless it says otherwise.

Tests that need asyncio only (anything touching litellm, uvicorn or a browser) mark
themselves with `pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio"])`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def repo_root() -> Path:
    return REPO


def subprocess_env() -> dict[str, str]:
    """An environment for `python -c` subprocesses that import this checkout of jeeves."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env
