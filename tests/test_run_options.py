"""`RunOptions`: one options object for run, stream and resume; `models=` keys checked; describe."""

from __future__ import annotations

import pytest

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic, RunOptions, UserError
from jeeves.errors import UserTypeError
from jeeves.journal import MemoryJournal
from jeeves.models.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _loop() -> ActorCritic:
    return ActorCritic(actor=Agent("Write."), critic=LLMCritic(), max_rounds=1)


def _script() -> ScriptedModel:
    return ScriptedModel({"actor": ["draft"], "critic": ['{"score": 1.0, "issues": [], "summary": "ok"}']})


async def test_keywords_and_options_run_the_same() -> None:
    by_keywords = await jeeves.run(_loop(), "t", model=_script(), session_id="k")
    by_options = await jeeves.run(_loop(), "t", options=RunOptions(model=_script(), session_id="k"))
    assert (by_keywords.output, by_keywords.stop_reason) == (by_options.output, by_options.stop_reason)
    assert by_keywords.output == "draft"


async def test_keywords_beside_options_replace_its_fields() -> None:
    base = RunOptions(model=ScriptedModel(["never"]), session_id="base")
    result = await jeeves.run(Agent("x"), "t", options=base, model=ScriptedModel(["mine"]), session_id="mine")
    assert (result.output, result.session_id) == ("mine", "mine")
    assert base.session_id == "base"  # frozen: the shared options are untouched


async def test_stream_and_resume_take_the_same_options() -> None:
    journal = MemoryJournal()
    options = RunOptions(model=ScriptedModel(["streamed"]), journal=journal, session_id="s1")
    async with jeeves.stream(Agent("x"), "t", options=options) as events:
        result = await events.result()
    assert result.output == "streamed"
    resumed = await jeeves.resume(Agent("x"), "s1", options=options)
    assert resumed.output == "streamed"


async def test_resume_needs_a_journal() -> None:
    with pytest.raises(UserError, match=r"resume\('s1'\) needs journal="):
        await jeeves.resume(Agent("x"), "s1", model=ScriptedModel([]))


async def test_an_unknown_option_is_named_with_a_suggestion() -> None:
    with pytest.raises(UserTypeError, match=r"modles= is not a run option; did you mean models=\?"):
        await jeeves.run(Agent("x"), "t", modles={"critic": "openai/gpt-4o"})  # type: ignore[call-arg]
    with pytest.raises(UserTypeError, match="options= must be a jeeves.RunOptions, got"):
        await jeeves.run(Agent("x"), "t", options={"model": "m"})  # type: ignore[arg-type]


def test_options_are_checked_where_they_are_built() -> None:
    with pytest.raises(UserTypeError, match=r"budget= must be a jeeves.Budget, got \{'max_usd': 1\}"):
        RunOptions(budget={"max_usd": 1})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="mode='strict' is not a journal mode"):
        RunOptions(mode="strict")  # type: ignore[arg-type]


async def test_a_misspelt_route_key_is_refused_with_did_you_mean() -> None:
    with pytest.raises(UserError, match=r"models=\{'critc': \.\.\.\}: .*\(did you mean 'critic'\?\)"):
        await jeeves.run(_loop(), "t", model=_script(), models={"critc": "openai/gpt-4o"})


async def test_a_route_key_that_matches_runs() -> None:
    critic = ScriptedModel({"critic": ['{"score": 1.0, "issues": [], "summary": "ok"}']})
    result = await jeeves.run(_loop(), "t", model=_script(), models={"actor_critic.critic": critic})
    assert result.output == "draft"


def test_describe_lists_the_role_paths_a_tree_routes() -> None:
    assert jeeves.describe(_loop()) == ["actor_critic.actor", "actor_critic.critic"]
    assert jeeves.describe(Agent("x"), role="solo") == ["solo"]


def test_describe_says_what_a_custom_tree_lacks() -> None:
    class Mine:
        name = "mine"

        async def run(self, ctx: object, task: str) -> jeeves.Output:
            return jeeves.Output.of(task)

    with pytest.raises(UserError, match=r"no\s+model_callers\(path, routed\) method"):
        jeeves.describe(Mine())
