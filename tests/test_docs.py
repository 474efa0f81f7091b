"""The documentation site: every page is in the nav, and the README's links lead somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import yaml

from tests.conftest import REPO, subprocess_env

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


def test_files_the_code_in_the_docs_reads_are_in_the_repository() -> None:
    pages = [REPO / "README.md", *DOCS.rglob("*.md")]
    read = re.compile(r'(?:Path\(|open\()"([^"]+)"\)(?:\.read_text\(\)|\.read\(\))')
    found = {(page.name, path) for page in pages for path in read.findall(page.read_text(encoding="utf-8"))}
    assert ("README.md", "examples/slugify/test_slugify.py") in found
    for page, path in sorted(found):
        assert (REPO / path).is_file(), f"{page} reads {path}, which the repository does not have"


def test_the_testing_page_example_runs_offline_with_a_script_per_role() -> None:
    page = (DOCS / "testing.md").read_text(encoding="utf-8")
    snippet = re.findall(r"```python\n(.*?)```\n", page, re.DOTALL)[0]
    assert "ScriptedModel({" in snippet
    done = subprocess.run(
        [sys.executable, "-c", snippet], env=subprocess_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "approved [0.2, 1.0]\n"


def _module_level_loop_calls(code: str) -> list[str]:
    return re.findall(r"^(?:anyio|asyncio|trio)\.run\(.*$", code, re.MULTILINE)


def test_samples_start_their_event_loop_only_when_run_as_a_script() -> None:
    """A sample that calls anyio.run at import time crashes `jeeves replay --spec module:attr`."""
    samples = {
        str(page.relative_to(REPO)): "\n".join(
            re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)
        )
        for page in DOCS.rglob("*.md")
    }
    samples |= {str(p.relative_to(REPO)): p.read_text() for p in (REPO / "examples").glob("*.py")}
    unguarded = {path: calls for path, code in samples.items() if (calls := _module_level_loop_calls(code))}
    assert unguarded == {}, 'put these under `if __name__ == "__main__":`'


def test_the_readme_and_the_quick_start_page_link_every_page() -> None:
    """The README's documentation list and docs/index.md are the map: a page neither names
    is a page nobody finds (the nav is checked above)."""
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    from_readme = {link.removeprefix("docs/") for link in re.findall(r"\]\((docs/[^)#]+)", readme)}
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    from_index = set(re.findall(r"\]\(([^)#:]+\.md)", index))
    assert sorted(pages - from_readme) == []
    assert sorted(pages - from_index - {"index.md"}) == []


def test_the_docs_examples_and_readme_name_public_paths_only() -> None:
    """`jeeves._run`, `jeeves._base`: private, free to change. A page shows what a user imports;
    only the design page (how jeeves is built) names the private modules."""
    private = re.compile(r"\bjeeves\._\w")
    pages = [REPO / "README.md", *DOCS.rglob("*.md"), *(REPO / "examples").rglob("*.py")]
    pages += [*(REPO / "examples").rglob("*.toml")]
    found = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()}"
        for page in pages
        if page != DOCS / "design.md"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if private.search(line)
    ]
    assert found == [], "\n".join(found)
    assert private.search("from jeeves._run.steps import next_index")
    assert not private.search("jeeves.architectures.next_index")
