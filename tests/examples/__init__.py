"""Tests that run the scripts in examples/, offline."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import REPO


def load_example(filename: str) -> ModuleType:
    """Import `examples/{filename}` as a module (examples are scripts, not a package)."""
    path = REPO / "examples" / filename
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
