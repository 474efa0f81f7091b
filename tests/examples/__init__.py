"""Tests that run the scripts in examples/: offline, and `--live` against a local mock server."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.conftest import REPO, offline_env


def load_example(filename: str) -> ModuleType:
    """Import `examples/{filename}` as a module (examples are scripts, not a package)."""
    path = REPO / "examples" / filename
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # so pydantic resolves the annotations of its models
    spec.loader.exec_module(module)
    return module


def run_example(
    filename: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `examples/{filename}` as a script from the repository root; offline unless `env` says otherwise."""
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / filename), *args],
        cwd=REPO,
        env=offline_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
