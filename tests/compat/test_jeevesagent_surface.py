"""jeevesagent 0.9.7's pinned constructor checks, names, workers and critique parsing, on both sides.

The same calls are made on jeevesagent and on jeeves.compat.jeevesagent (the module is
the only difference), and their answers compared.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import jeevesagent
import pytest
from jeevesagent.architecture.actor_critic import _parse_critique as their_parse

import jeeves.compat.jeevesagent as compat
from jeeves.compat.jeevesagent import EVENT_NAMES, parse_critique
from jeeves.compat.jeevesagent.actor_critic import _parse_critique
from jeeves.journal.memory import MemoryJournal
from tests.compat._differential import DOC, Side
from tests.compat._scenarios import refined_then_approved, review

pytestmark = pytest.mark.anyio
SIDES = pytest.mark.parametrize("ja", [jeevesagent, compat], ids=["jeevesagent", "jeeves"])


def agent(ja: ModuleType, reply: str = "x", instructions: str = "test") -> Any:
    return ja.Agent(instructions, model=ja.ScriptedModel([ja.ScriptedTurn(text=reply)]))


def architectures(ja: ModuleType) -> dict[str, Any]:
    a, c, w = agent(ja), agent(ja, review(1.0)), agent(ja, "alpha")
    return {
        "actor_critic": (ja.ActorCritic(actor=a, critic=c), {"actor": a, "critic": c}),
        "self_refine": (ja.SelfRefine(), {}),
        "supervisor": (ja.Supervisor(workers={"alpha": w}), {"alpha": w}),
    }


@SIDES
def test_each_architecture_satisfies_the_protocol_and_declares_its_workers(ja: ModuleType) -> None:
    for arch, workers in architectures(ja).values():
        assert isinstance(arch, ja.Architecture)
        declared = arch.declared_workers()
        assert declared == workers
        assert all(declared[k] is workers[k] for k in workers)


def test_the_names_are_jeevesagents() -> None:
    theirs = {k: a.name for k, (a, _) in architectures(jeevesagent).items()}
    ours = {k: a.name for k, (a, _) in architectures(compat).items()}
    assert (
        ours
        == theirs
        == {"actor_critic": "actor-critic", "self_refine": "self-refine", "supervisor": "supervisor"}
    )


BAD = [
    ("ActorCritic", {"max_rounds": 0}, "max_rounds"),
    ("ActorCritic", {"approval_threshold": 1.5}, "approval_threshold"),
    ("ActorCritic", {"approval_threshold": -0.1}, "approval_threshold"),
    ("SelfRefine", {"max_rounds": 0}, "max_rounds"),
    ("Supervisor", {"workers": {}}, "at least one worker"),
]


@SIDES
@pytest.mark.parametrize(("cls", "options", "needle"), BAD, ids=[f"{c}-{o}" for c, o, _ in BAD])
def test_bad_options_are_value_errors_naming_the_option(
    ja: ModuleType, cls: str, options: dict[str, Any], needle: str
) -> None:
    if cls == "ActorCritic":
        options = {"actor": agent(ja), "critic": agent(ja), **options}
    with pytest.raises(ValueError, match=re.escape(needle)):
        getattr(ja, cls)(**options)


REPLIES = [
    '{"issues": ["a", "b"], "score": 0.6, "summary": "needs work"}',
    '```json\n{"issues": ["a"], "score": 0.4, "summary": "x"}\n```',
    '{"issues": [], "score": 1.5, "summary": ""}',
    '{"issues": [], "score": -3, "summary": ""}',
    '{"issues": ["a", "", null], "score": "0.7"}',
    '{"issues": [], "score": "high"}',
    "I find some issues. score: 0.42",
    "Score = 7 out of 10",
    "no number anywhere here",
    "",
    "   ",
    '["not", "an", "object"]',
]


@pytest.mark.parametrize("reply", REPLIES)
def test_critiques_are_read_as_jeevesagent_reads_them(reply: str) -> None:
    theirs, ours = their_parse(reply), parse_critique(reply)
    assert (ours.issues, ours.score, ours.summary) == (theirs.issues, theirs.score, theirs.summary)
    assert _parse_critique is parse_critique
    assert isinstance(ours, compat.CriticOutput)


def test_how_a_critique_was_read_is_flagged() -> None:
    assert parse_critique('{"score": 1.5}').obtained == "schema"
    assert parse_critique("so-so. score: 0.42").obtained == "repaired"
    assert parse_critique("no number").obtained == "fallback"
    assert not parse_critique("no number").approves(
        0.0
    )  # jeevesagent would approve at 0.0: D-fallback-never-approves


def test_the_doc_maps_every_event_name_as_the_layer_does() -> None:
    page = DOC.read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `([a-z_.]+)` \| (.+) \|$", page, re.MULTILINE))
    documented = {name: table.get(name, "").replace("`", "") for name in EVENT_NAMES}
    assert documented == {name: source.replace("`", "") for name, source in EVENT_NAMES.items()}


async def test_a_compat_agents_run_replays_exactly_from_its_journal() -> None:
    journal = MemoryJournal()
    built, prompt = refined_then_approved(Side("jeeves", compat))
    recorded = await built.run(prompt, session_id="job", journal=journal)
    again, _ = refined_then_approved(Side("jeeves", compat))
    replayed = await again.run(prompt, session_id="job", journal=journal, mode="replay")
    assert (replayed.output, replayed.turns) == (recorded.output, recorded.turns) == ("polished v1", 4)
    assert replayed.jeeves_result is not None and recorded.jeeves_result is not None
    assert replayed.jeeves_result.detail == recorded.jeeves_result.detail
