"""A spec names an architecture of the user's own by `module:attr`, with its parts built."""

from __future__ import annotations

from pathlib import Path

import pytest

import jeeves
from jeeves.errors import UserError
from jeeves.spec import build, load_spec

pytestmark = pytest.mark.anyio
DEBATE = Path(__file__).resolve().parents[2] / "examples" / "debate.toml"


async def test_the_debate_spec_builds_its_parts_and_runs_offline() -> None:
    arch, router = build(load_spec(DEBATE), offline=True)
    assert type(arch).__name__ == "Debate" and arch.turns == 1  # type: ignore[attr-defined]
    result = await jeeves.run(arch, "Monorepo?", router=router)
    assert (result.stop_reason, result.detail.winner) == ("judged", "pro")  # type: ignore[union-attr]


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            'architecture = "nope.module:Debate"',
            r"architecture: Cannot import 'nope.module' for 'nope.module:Debate' .*check the module path",
        ),
        (
            'architecture = "json:Nope"',
            r"'json' has no attribute 'Nope' \(from 'json:Nope'\); check the name",
        ),
        ('architecture = "json:dumps"', r"architecture = 'json:dumps' does not take these keys|gave"),
        (
            'architecture = "not a path"',
            r"'not a path' is not an import path; write 'package.module:attribute'",
        ),
    ],
)
def test_a_bad_import_path_is_one_line_naming_the_value(tmp_path: Path, text: str, shown: str) -> None:
    with pytest.raises(UserError, match=shown) as caught:
        build(load_spec(_spec(tmp_path, text)))
    assert "\n" not in str(caught.value)


def test_a_key_the_architecture_does_not_take_is_named(tmp_path: Path) -> None:
    text = DEBATE.read_text().replace("turns = 1", "rounds = 1")
    path = tmp_path / "debate.toml"
    path.write_text(text)
    (tmp_path / "debate.py").write_text((DEBATE.parent / "debate.py").read_text())
    with pytest.raises(UserError, match=r"does not take these keys .*'rounds'"):
        build(load_spec(path))
