"""Tests that run the scripts in examples/, offline."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.conftest import REPO, subprocess_env


def load_example(filename: str) -> ModuleType:
    """Import `examples/{filename}` as a module (examples are scripts, not a package)."""
    path = REPO / "examples" / filename
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def offline_env() -> dict[str, str]:
    """The subprocess environment with every provider key removed: offline means offline."""
    return {k: v for k, v in subprocess_env().items() if not k.endswith("_API_KEY")}


def run_example(filename: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `examples/{filename}` as a script, offline, from the repository root."""
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / filename), *args],
        cwd=REPO,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
