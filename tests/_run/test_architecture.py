"""`model_callers`: the sessions an architecture tree calls models from, said without running it.

Spec checks (tests/spec/test_routes.py) trust this answer, so these tests hold it to what
runs really do: every session that called a model, and every role path the router resolved.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import jeeves
from jeeves import ActorCritic, Agent, CitationCritic, LLMCritic, SelfRefine, Supervisor
from jeeves._run.context import Caller, model_callers
from jeeves.models.base import Route
from jeeves.models.router import Router
from jeeves.spec import build, load_spec
from jeeves.testing import Reply, ScriptedModel, call
from tests.conftest import REPO

pytestmark = pytest.mark.anyio


class SpyRouter(Router):
    """A Router that remembers every role path it resolved."""

    def __init__(self, routes: Router) -> None:
        super().__init__(routes.routes)
        self.resolved: set[tuple[str, ...]] = set()

    def resolve(self, role_path: Sequence[str]) -> Route:
        self.resolved.add(tuple(role_path))
        return super().resolve(role_path)


def split(found: list[Caller] | None) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    assert found is not None
    return {c.path for c in found}, {c.routed for c in found if c.routed is not None}


def delegate(worker: str) -> Reply:
    return Reply(tool_calls=[call("delegate", {"worker": worker, "instructions": "go"})])


async def test_a_nested_tree_says_what_its_run_does() -> None:
    pinned_model = ScriptedModel(["pinned answer"], model_name="pinned")
    coder = ActorCritic(Agent("Write."), [CitationCritic({"a"}), LLMCritic()], max_rounds=0)
    team = Supervisor(
        {
            "coder": coder,
            "writer": SelfRefine(Agent("Write prose.", role="prose"), max_rounds=0),
            "pinned": Agent("Answer.", model=Route(model="pinned", client=pinned_model)),
        },
        role="lead",
    )
    model = ScriptedModel(
        {
            "lead": [
                Reply(tool_calls=[*delegate("coder").tool_calls, *delegate("writer").tool_calls]),
                delegate("pinned"),
                "done",
            ],
            "actor": ["draft [a]"],
            "critic": ['{"score": 0.9}'],
            "draft": ["prose"],
            "feedback": ['{"score": 0.9}'],
        }
    )
    router = SpyRouter(Router({"default": model}))
    await jeeves.run(team, "task", router=router)
    called = {tuple(r.role_path) for r in [*model.requests, *pinned_model.requests]}
    assert split(model_callers(team, ("lead",))) == (called, router.resolved)
    assert ("lead", "pinned") in called and ("lead", "pinned") not in router.resolved
    assert ("lead", "writer") in router.resolved  # SelfRefine's draft and feedback route as it


@pytest.mark.parametrize("name", ["codegen", "research_team", "self_refine", "refund_plan"])
async def test_each_ready_spec_says_what_its_run_does(name: str) -> None:
    spec = load_spec(REPO / "architectures" / f"{name}.toml")
    arch, routes = build(spec, offline=True)
    router = SpyRouter(routes)
    assert spec.demo is not None
    await jeeves.run(arch, spec.demo.task, router=router)
    scripted = routes.routes["default"].client
    assert isinstance(scripted, ScriptedModel)
    called = {tuple(r.role_path) for r in scripted.requests}
    assert split(model_callers(arch, (arch.role,))) == (called, router.resolved)


def test_code_of_the_users_own_cannot_say() -> None:
    class Custom:
        name = "custom"

        async def run(self, ctx: object, task: str) -> object:
            raise NotImplementedError

    assert model_callers(Custom(), ("custom",)) is None
    assert model_callers(ActorCritic(Custom(), LLMCritic()), ("ac",)) is None

    class MyCritic:
        name = "mine"

        async def review(self, ctx: object, review: object) -> object:
            raise NotImplementedError

    assert model_callers(ActorCritic(Agent("x"), MyCritic()), ("ac",)) is None
    assert model_callers(ActorCritic(Agent("x"), lambda t, o: True), ("ac",)) == [
        Caller(("ac", "actor"), ("ac", "actor"))
    ]
