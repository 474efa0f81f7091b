"""Route keys checked against the sessions a spec runs, and the routing `jeeves validate` shows."""

from __future__ import annotations

from typing import Any

import pytest

from jeeves._run.routes import callers, unmatched_key
from jeeves.errors import UserError
from jeeves.models.base import Route
from jeeves.models.router import Router
from jeeves.spec import build, parse_spec
from jeeves.spec.routes import RoutedCall, routing

TEAM: dict[str, Any] = {
    "type": "supervisor",
    "role": "lead",
    "workers": {
        "coder": {
            "type": "actor_critic",
            "actor": {"instructions": "Write."},
            "critic": [{"type": "citations", "evidence_ids": ["a"]}, {"type": "llm"}],
        },
        "writer": {"type": "self_refine", "agent": {"instructions": "Write prose."}},
        "pinned": {"instructions": "Answer.", "model": "openai/gpt-4o"},
    },
}


def test_a_key_matches_a_path_it_is_an_ending_of() -> None:
    paths = [("lead", "writer", "critic")]
    for key in ("critic", "writer.critic", "lead.writer.critic", "default"):
        assert unmatched_key(key, paths, "routes") is None
    assert unmatched_key("writer", paths, "routes") == (
        "no session of this spec routes as 'writer' (did you mean 'writer.critic'?); use one of "
        "'critic', 'writer.critic', 'lead.writer.critic', 'default'."
    )
    assert unmatched_key("lead", [], "routes") == (
        "no session of this spec calls a model, so 'lead' is never looked up; remove it."
    )


def test_the_sessions_that_call_models_and_how_they_route() -> None:
    arch, _ = build(parse_spec(TEAM))
    found = callers(arch)
    assert found is not None
    assert [(".".join(c.path), c.routed and ".".join(c.routed)) for c in found] == [
        ("lead", "lead"),
        ("lead.coder.actor", "lead.coder.actor"),
        ("lead.coder.critic", "lead.coder.critic"),  # the citations critic calls no model; the llm one does
        ("lead.writer.draft", "lead.writer"),  # SelfRefine's calls route as the SelfRefine
        ("lead.writer.feedback", "lead.writer"),
        ("lead.pinned", None),  # pins its own model: no route is looked up
    ]


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        (
            {"models": {"critc": "openai/gpt-4o"}},
            "spec: models.critc: no session of this spec routes as 'critc' (did you mean 'critic'?)",
        ),
        (
            {"models": {"pinned": "openai/gpt-4o"}},  # the pin wins: this route would never be used
            "spec: models.pinned: no session of this spec routes as 'pinned'",
        ),
        (
            {"models": {"draft": "openai/gpt-4o"}},  # draft calls route as the SelfRefine: 'writer'
            "spec: models.draft: no session of this spec routes as 'draft'",
        ),
        (
            {"demo": {"task": "t", "script": {"feedbak": ["x"]}}},
            "spec: demo.script.feedbak: no session of this spec calls a model as 'feedbak' (did you mean 'feedback'?)",
        ),
    ],
)
def test_a_key_no_session_uses_is_an_error_naming_it(tables: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as raised:
        build(parse_spec({**TEAM, **tables}))
    assert str(raised.value).startswith(message), str(raised.value)


def test_keys_every_session_uses_build() -> None:
    models = {"lead": "openai/b", "coder.critic": "openai/d", "writer": "openai/f", "default": "openai/h"}
    script = {"draft": ["x"], "feedback": ["y"], "pinned": ["z"], "lead.coder.actor": ["w"]}
    build(parse_spec({**TEAM, "models": models, "demo": {"task": "t", "script": script}}))


def test_an_override_no_session_uses_is_an_error() -> None:
    with pytest.raises(UserError, match=r"the model override 'reviewer' \(--model reviewer=\.\.\.\)"):
        build(parse_spec(TEAM), models={"reviewer": "openai/gpt-4o"})


def test_a_tree_with_code_of_the_users_own_is_not_checked() -> None:
    data = {**TEAM, "workers": {**TEAM["workers"], "custom": {"type": "agent", "instructions": "x"}}}
    arch, _ = build(parse_spec(data))

    class Custom:
        name = "custom"

        async def run(self, ctx: object, task: str) -> object:
            raise NotImplementedError

    arch.workers["custom"] = Custom()
    assert callers(arch) is None


def test_routing_names_the_route_and_the_key_that_chose_it() -> None:
    arch, _ = build(parse_spec(TEAM))
    found = callers(arch)
    assert found is not None
    router = Router({"critic": Route(model="openai/d", fallbacks=("openai/f",)), "writer": "openai/x"})
    rows = {".".join(r.path): r for r in routing(found, router)}
    assert rows["lead.coder.critic"] == RoutedCall(
        ("lead", "coder", "critic"), "critic", router.routes["critic"]
    )
    assert rows["lead.writer.draft"].key == rows["lead.writer.feedback"].key == "writer"
    assert rows["lead"] == RoutedCall(("lead",), None, None)  # no key reaches it
    assert rows["lead.pinned"].pinned
