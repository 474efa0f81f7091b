"""Every `jeeves` command a page tells a reader to type runs as written, offline, from a fresh
folder: docs/index.md, docs/cli.md, docs/approvals.md, docs/architectures/*.md and the header
of every file in architectures/ (docs/scaling.md's workers have their own test).

Each page's commands (`tests.docs.commands`) must be exactly the ones listed for it here,
in order, so a command added to a page, changed or removed fails this test until its
expected outcome is written down. The commands of a page run one after another in one
temporary folder holding a copy of `architectures/`, as `python -m jeeves`, with no API key
in the environment. A command that needs a real model is marked `live` with the reason;
it still runs here, and must stop before any call with exit 2, naming the key it needs and
the `--offline` form, which is what a reader without that key sees.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.docs.commands import commands, run_command


@dataclass(frozen=True)
class Step:
    command: str
    """As the page writes it (without its comment)."""
    code: int = 0
    """The exit code (`jeeves.cli.exits.ExitCode`)."""
    lines: tuple[str, ...] = ()
    """Text the output (stdout and stderr) must hold."""
    live: str | None = None
    """Why the command needs a real model; it must then stop at once offline (exit 2)."""


REFUND_DESK_RUN = Step(
    "jeeves run architectures/refund_desk.toml --offline --journal runs.db --session-id t-881",
    code=3,
    lines=(
        "⏸ gate t-881#3: issue_refund(order_id='881', amount=42.0) [destructive] · awaiting approval",
        "stop reason: awaiting_approval",
        "pending: t-881#3  issue_refund({'order_id': '881', 'amount': 42.0})  mode=destructive  expires ",
        "Z (in 23 h 59 min)",
        "approve runs.db t-881 --by NAME",
        "resume runs.db t-881 --offline",
    ),
)
AWAITING = Step(
    "jeeves runs runs.db --status awaiting_gate", lines=("t-881                    awaiting_gate",)
)
APPROVE = Step(
    'jeeves approve runs.db t-881 --by alice --note "checked the invoice"',
    lines=("approved by alice: t-881#3  issue_refund(", "resume runs.db t-881 --offline"),
)
RESUME = Step(
    "jeeves resume runs.db t-881 --offline",
    lines=(
        "✓ gate t-881#3: issue_refund(order_id='881', amount=42.0) [destructive] · approved by alice",
        "Order 881 is refunded: 42.00 back to dana@example.com.",
        "stop reason: completed",
        "replay runs.db t-881",
    ),
)


def _live(spec: str, task: str, key: str) -> Step:
    return Step(
        f"jeeves run architectures/{spec} {task}",
        code=2,
        lines=(key, "--offline"),
        live=f"calls the models of {spec}'s [models] table",
    )


def _offline(spec: str, *lines: str) -> Step:
    return Step(f"jeeves run architectures/{spec} --offline", lines=("stop reason: ", *lines))


PAGES: dict[str, list[Step]] = {
    "docs/cli.md": [
        Step(
            "jeeves run architectures/self_refine.toml --offline --journal runs.db --session-id gen-1",
            lines=("stop reason: approved · 4 model calls", "journal: runs.db", "replay runs.db gen-1"),
        ),
        _live("codegen.toml", '"Write parse_duration(text)."', "ANTHROPIC_API_KEY"),
        Step(
            "jeeves validate architectures/research_team.toml",
            lines=("architectures/research_team.toml: valid", "lead.writer.critic  → openai/gpt-4o"),
        ),
        Step(
            "jeeves describe architectures/research_team.toml",
            lines=("lead.researcher     → openai/gpt-4o-mini  (models.researcher)", "lead.writer.critic  → "),
        ),
        REFUND_DESK_RUN,
        AWAITING,
        Step(
            "jeeves gates runs.db",
            lines=(
                "t-881#3  issue_refund({'order_id': '881', 'amount': 42.0})  mode=destructive  expires ",
                "Z (in 23 h 59 min)\n  decide with: ",
                "approve runs.db t-881 --by NAME\n",
            ),
        ),
        APPROVE,
        RESUME,
    ],
    "docs/approvals.md": [REFUND_DESK_RUN, AWAITING, APPROVE, RESUME],
    "docs/index.md": [
        _offline("codegen.toml", "approved"),
        _live("codegen.toml", '"Write parse_duration(text) ..."', "ANTHROPIC_API_KEY"),
        _live(
            "research_team.toml",
            '"..." --model researcher=openai/gpt-4o --journal runs.db',
            "ANTHROPIC_API_KEY",
        ),
    ],
    "docs/architectures/plan-execute.md": [
        Step(
            "jeeves run architectures/refund_plan.toml --offline --journal runs.db --session-id refund-881",
            lines=("stop reason: ",),
        ),
        Step(
            "jeeves rejudge runs.db --critic new_rules.toml",
            lines=("completed 0.90", "refused_by_critic 0.90", "reviewer fail", "1 changed"),
        ),
        Step(
            "jeeves rejudge runs.db refund-881 --critic new_rules.toml --json",
            lines=('"before":"completed","after":"refused_by_critic"',),
        ),
    ],
    "architectures/codegen.toml": [
        _offline("codegen.toml", "approved"),
        _live("codegen.toml", '"Write parse_duration(text) ..."', "ANTHROPIC_API_KEY"),
    ],
    "architectures/ops_goal.toml": [
        _offline("ops_goal.toml", "verified"),
        _live("ops_goal.toml", '"Get the web service healthy."', "ANTHROPIC_API_KEY"),
    ],
    "architectures/refund_desk.toml": [REFUND_DESK_RUN, APPROVE, RESUME],
    "architectures/refund_plan.toml": [
        _offline("refund_plan.toml", "completed"),
        _live("refund_plan.toml", '"Refund order ord_881: it arrived damaged."', "ANTHROPIC_API_KEY"),
    ],
    "architectures/research_team.toml": [
        _offline("research_team.toml"),
        _live("research_team.toml", '"How did structured concurrency reach Python?"', "ANTHROPIC_API_KEY"),
    ],
    "architectures/self_refine.toml": [
        _offline("self_refine.toml", "approved"),
        _live(
            "self_refine.toml",
            '"Explain Python\'s GIL to a new programmer in 100 words."',
            "ANTHROPIC_API_KEY",
        ),
    ],
}
"""Each page's commands, in order, with what they must do. A page not listed has none."""

FILES: dict[str, dict[str, str]] = {
    "docs/architectures/plan-execute.md": {
        "new_rules.toml": r"with, in `new_rules.toml`:\n\n```toml\n(.*?)```"
    },
}
"""Files a page shows in full for its commands to use: name → the pattern that finds them on the page."""


def _pages() -> list[str]:
    found = [REPO / "docs" / "index.md", REPO / "docs" / "cli.md", REPO / "docs" / "approvals.md"]
    found += sorted((REPO / "docs" / "architectures").glob("*.md"))
    found += sorted(p for p in (REPO / "architectures").iterdir() if p.suffix in (".toml", ".py"))
    return [str(p.relative_to(REPO)) for p in found]


def test_the_live_commands_say_why() -> None:
    live = [step for steps in PAGES.values() for step in steps if step.live is not None]
    assert live and all(step.live.strip() and step.code == 2 for step in live if step.live is not None)


@pytest.mark.parametrize("page", _pages())
def test_the_commands_of_a_page_run_as_written(page: str, tmp_path: Path) -> None:
    steps = PAGES.get(page, [])
    found = commands(REPO / page)
    assert found == [commands_of(step) for step in steps], (
        f"{page}'s commands changed; list them in PAGES with what each must do"
    )
    if not steps:
        return
    shutil.copytree(REPO / "architectures", tmp_path / "architectures")
    text = (REPO / page).read_text(encoding="utf-8")
    for name, pattern in FILES.get(page, {}).items():
        shown = re.search(pattern, text, re.DOTALL)
        assert shown is not None, f"{page} no longer shows {name}"
        (tmp_path / name).write_text(shown.group(1), encoding="utf-8")
    for step, argv in zip(steps, found, strict=True):
        done = run_command(argv, tmp_path)
        output = done.stdout + done.stderr
        assert done.returncode == step.code, f"{step.command}: exit {done.returncode}\n{output}"
        missing = [line for line in step.lines if line not in output]
        assert not missing, f"{step.command}: no {missing!r} in\n{output}"
        assert "Traceback" not in output, output


def commands_of(step: Step) -> list[str]:
    return shlex.split(step.command)
