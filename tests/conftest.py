"""Shared test configuration."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run `@pytest.mark.anyio` tests on asyncio (litellm is asyncio-only)."""
    return "asyncio"
