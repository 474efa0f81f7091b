"""The documentation site: every page is in the nav, and the README's links lead somewhere."""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.conftest import REPO

DOCS = REPO / "docs"


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    return []


def test_every_page_is_in_the_nav_once() -> None:
    nav = _nav_pages(yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def test_the_readme_links_to_pages_that_exist() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 10
    for link in links:
        assert (REPO / link).is_file(), link
