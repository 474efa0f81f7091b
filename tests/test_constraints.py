"""Installs are reproducible: constraints.txt pins every dependency, inside pyproject's ranges."""

from __future__ import annotations

import os
import subprocess
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO


def _pins() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pairs = (line.split("==") for line in lines if line and not line.startswith("#"))
    return {canonicalize_name(name): version for name, version in pairs}


def _requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"].values()
    return [Requirement(r) for r in [*project["dependencies"], *(r for group in extras for r in group)]]


def test_every_dependency_is_pinned_to_a_version_inside_its_range() -> None:
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, (
            f"{requirement.name} is not in constraints.txt; run scripts/check-latest --update"
        )
        assert requirement.specifier.contains(pins[name]), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {requirement}"
        )
        assert requirement.specifier, f"{requirement} has no lower bound; give the tested one"


def test_the_constraints_are_exact_pins_and_leave_jeeves_out() -> None:
    pins = _pins()
    assert "jeeves" not in pins
    assert len(pins) > 50  # the whole tree, not just the direct dependencies


def test_check_latest_says_what_it_does() -> None:
    script = REPO / "scripts" / "check-latest"
    assert os.access(script, os.X_OK)
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "newest" in done.stdout and "--update" in done.stdout
