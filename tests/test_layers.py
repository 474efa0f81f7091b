"""docs/design.md draws the layers the import-linter contract in pyproject.toml enforces."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO

LINE = re.compile(r"^(jeeves[\w.]*(?: \| jeeves[\w.]*)*)\s{2,}\S")


def contract_layers() -> list[set[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [
        c["layers"] for c in contracts if c["type"] == "layers" and c["name"].startswith("Layers go one way")
    ]
    return [{name.strip() for name in layer.split(":")} for layer in layers]


def drawn_layers() -> list[set[str]]:
    text = (REPO / "docs" / "design.md").read_text()
    section = text.split("\n## Layers\n", 1)[1]
    picture = section.split("```\n", 2)[1]
    layers = []
    for line in picture.splitlines():
        found = LINE.match(line)
        assert found, f"docs/design.md: a layer line is 'jeeves.a | jeeves.b  what they hold', got {line!r}"
        layers.append(set(found.group(1).split(" | ")))
    return layers


def test_the_design_page_draws_the_contracts_layers_top_down() -> None:
    assert drawn_layers() == contract_layers()


def test_every_package_of_jeeves_has_a_layer() -> None:
    placed = set().union(*contract_layers())
    top = {p.name for p in (REPO / "jeeves").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    top |= {p.stem for p in (REPO / "jeeves").glob("*.py") if not p.name.startswith("__")}
    front_door = {"testing"}  # beside jeeves/__init__.py, above every layer
    assert {f"jeeves.{name}" for name in top - front_door} == placed
