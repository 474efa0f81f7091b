from __future__ import annotations

import socket
import subprocess
import sys

import anyio
import pytest

import jeeves
from jeeves import Agent, Budget, FunctionModel, ScriptedModel, tool
from jeeves.errors import BudgetExceeded, ProviderError, UserError, UserTypeError
from jeeves.testing import Reply, call
from tests.conftest import REPO, subprocess_env

pytestmark = pytest.mark.anyio


async def test_run_returns_output_usage_and_roles() -> None:
    @tool
    def word_count(text: str) -> int:
        """Count the words in a text."""
        return len(text.split())

    model = ScriptedModel(
        {"counter": [Reply(tool_calls=[call("word_count", {"text": "a b c"})]), "3 words."]}
    )
    agent = Agent("You count words.", role="counter", tools=[word_count])
    result = await jeeves.run(agent, "How many words in 'a b c'?", model=model, session_id="job-1")
    assert result.output == "3 words."
    assert result.session_id == "job-1"
    assert result.stop_reason == "completed"
    assert result.usage.model_calls == 2
    assert set(result.usage_by_role) == {"counter"}
    assert result.cost_usd == 0.0
    model.assert_consumed()
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.content == "3"


async def test_stream_events_in_order_with_tree_fields() -> None:
    model = ScriptedModel(["hello there"])
    async with jeeves.stream(Agent("hi"), "task", model=model, session_id="s1") as events:
        seen = [e async for e in events]
        result = await events.result()
    assert [e.type for e in seen] == [
        "session.started",
        "model.delta",
        "model.delta",
        "model.completed",
        "session.completed",
    ]
    started = seen[0]
    assert started.type == "session.started"
    assert (started.parent_id, started.role, started.architecture, started.model) == (
        None,
        "agent",
        "agent",
        "scripted",
    )
    assert [e.seq for e in seen] == [1, 2, 3, 4, 5]
    assert result.text == "hello there"


async def test_a_stream_entered_twice_says_to_start_another_and_the_first_run_stands() -> None:
    model = ScriptedModel(["hello there"])
    run = jeeves.stream(Agent("hi"), "task", model=model, session_id="s1")
    async with run as events:
        result = await events.result()
    with pytest.raises(UserError, match=r"already entered.*jeeves\.stream\(\.\.\.\) again"):
        async with run:
            pass
    assert result.text == "hello there" and result.usage.model_calls == 1
    model.assert_consumed()


async def test_leaving_the_stream_early_cancels_the_tree_and_spares_the_caller() -> None:
    state = {"tool": "not started"}
    began = anyio.Event()

    @tool
    async def slow() -> str:
        """Runs until cancelled."""
        state["tool"] = "running"
        began.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            state["tool"] = "cancelled"
            raise
        raise AssertionError("unreachable")

    model = ScriptedModel([Reply(tool_calls=[call("slow")]), "never"])
    async with jeeves.stream(Agent("x", tools=[slow]), "t", model=model) as events:
        async for event in events:
            if event.type == "tool.started":
                with anyio.fail_after(5):
                    await began.wait()  # the tool is running
                break
    # The caller's next await completes normally: nothing leaked a cancellation into it.
    with anyio.fail_after(5):
        await anyio.lowlevel.checkpoint()
    assert state["tool"] == "cancelled"


async def test_error_surfaces_as_itself_with_session_id() -> None:
    model = ScriptedModel([ProviderError("the provider is down", status_code=400)])
    async with jeeves.stream(Agent("x"), "t", model=model, session_id="job-9") as events:
        seen: list[str] = []
        with pytest.raises(ProviderError) as info:
            async for event in events:
                seen.append(event.type)
    assert info.value.session_id == "job-9"
    assert seen[-1] == "session.failed"
    with pytest.raises(ProviderError):
        await jeeves.run(Agent("x"), "t", model=ScriptedModel([ProviderError("down", status_code=400)]))


async def test_result_drains_unread_events() -> None:
    model = ScriptedModel(["word " * 50])
    async with jeeves.stream(Agent("x"), "t", model=model, max_buffer=2) as events:
        result = await events.result()
    assert result.output.strip().startswith("word")


async def test_missing_route_is_a_user_error_listing_routes() -> None:
    router = jeeves.Router({"critic": ScriptedModel(["x"])})
    with pytest.raises(UserError, match=r"No model route for role 'counter'.*routes: critic"):
        await jeeves.run(Agent("x", role="counter"), "t", router=router)


async def test_invalid_root_session_id() -> None:
    with pytest.raises(UserError, match="a__b"):
        await jeeves.run(Agent("x"), "t", model=ScriptedModel(["x"]), session_id="a__b")


@pytest.mark.parametrize(
    ("arguments", "error", "shown"),
    [
        ({"task": None}, UserTypeError, "The task must be a str, got None"),
        ({"task": ["t"]}, UserTypeError, r"The task must be a str, got \['t'\]"),
        ({"budget": {"max_usd": 1}}, UserTypeError, r"budget= must be a jeeves.Budget, got \{'max_usd': 1\}"),
        ({"router": {"default": "m/x"}}, UserTypeError, "router= must be a jeeves.Router"),
        ({"models": ["m/x"]}, UserTypeError, r"models= must map roles to models, got \['m/x'\]"),
        ({"mode": "strict"}, UserError, r"mode='strict' is not a journal mode"),
    ],
)
@pytest.mark.parametrize("entry", ["run", "stream"])
async def test_bad_run_arguments_are_user_errors_naming_the_value(
    entry: str, arguments: dict[str, object], error: type[UserError], shown: str
) -> None:
    given: dict[str, object] = {"task": "t", "model": ScriptedModel([]), **arguments}
    task = given.pop("task")
    with pytest.raises(error, match=shown):
        if entry == "run":
            await jeeves.run(Agent("x"), task, **given)  # type: ignore[arg-type]
        else:
            async with jeeves.stream(Agent("x"), task, **given):  # type: ignore[arg-type]
                pass


async def test_stream_max_buffer_must_be_a_count() -> None:
    with pytest.raises(UserTypeError, match="max_buffer must be an int >= 0, got '8'"):
        async with jeeves.stream(Agent("x"), "t", model=ScriptedModel([]), max_buffer="8"):  # type: ignore[arg-type]
            pass


async def test_budget_stops_the_run_and_keeps_best_output() -> None:
    @tool
    def noop() -> str:
        """Does nothing."""
        return "ok"

    model = ScriptedModel([Reply(text="draft answer", tool_calls=[call("noop")]), "never reached"])
    async with jeeves.stream(
        Agent("x", tools=[noop]), "t", model=model, budget=Budget(max_model_calls=1)
    ) as events:
        types = [e.type async for e in events]
        result = await events.result()
    assert "budget.exceeded" in types
    assert result.stop_reason == "budget"
    assert result.output == "draft answer"
    assert model.remaining() == {"default": 1}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # litellm runs on asyncio only
async def test_the_deadline_cancels_a_provider_that_never_answers() -> None:
    from jeeves.models.litellm import LiteLLMClient, _litellm

    _litellm()  # imported before the clock starts: the deadline is for the call, not the import
    with socket.socket() as server:  # listens, never accepts: the request is sent, no answer comes
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        client = LiteLLMClient(api_base=f"http://127.0.0.1:{port}/v1", api_key="test-key")
        router = jeeves.Router({"default": "openai/gpt-4o-mini"}, client=client)
        with anyio.fail_after(30):  # generous: the 2 s deadline ends it, not litellm's own 600 s timeout
            result = await jeeves.run(Agent("x"), "t", router=router, budget=Budget(deadline_s=2))
    assert (result.stop_reason, result.output) == ("budget", None)


async def test_budget_with_nothing_to_keep() -> None:
    model = ScriptedModel(["never"])
    result = await jeeves.run(Agent("x"), "t", model=model, budget=Budget(max_tokens=0))
    assert (result.stop_reason, result.output) == ("budget", None)
    with pytest.raises(BudgetExceeded):
        raise BudgetExceeded("x", limit="usd", allowed=1, spent=2)


def test_import_does_not_import_litellm() -> None:
    code = "import sys, jeeves; assert 'litellm' not in sys.modules, 'litellm imported'; print('ok')"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=subprocess_env()
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_same_ids_in_two_fresh_processes() -> None:
    code = (
        "import anyio, jeeves\n"
        "from tests.test_events import _Parallel\n"
        "async def main():\n"
        "    async with jeeves.stream(_Parallel(3), 'go', model=jeeves.FunctionModel(lambda r: 'x'), "
        "session_id='fixed') as ev:\n"
        "        print(sorted({e.session_id async for e in ev}))\n"
        "anyio.run(main)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=subprocess_env()
        )
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    assert "fixed__worker_2" in runs[0].stdout


async def test_a_child_without_a_route_is_announced_and_fails_as_itself() -> None:
    class Parent:
        name = "parent"

        async def run(self, ctx: jeeves.Context, task: str) -> jeeves.Output:
            return await ctx.run(Agent("x"), task, role="orphan")

    router = jeeves.Router({"parent": ScriptedModel([])})
    async with jeeves.stream(Parent(), "t", router=router, session_id="p") as events:
        seen = []
        with pytest.raises(UserError) as info:
            async for event in events:
                seen.append((event.type, event.session_id))
    assert info.value.session_id == "p__orphan_0"
    assert ("session.started", "p__orphan_0") in seen
    assert ("session.failed", "p__orphan_0") in seen


async def test_usage_by_path_keeps_apart_what_usage_by_role_adds_up() -> None:
    def pair() -> jeeves.ActorCritic:
        return jeeves.ActorCritic(jeeves.Agent("Write."), jeeves.LLMCritic(), max_rounds=0)

    delegate = Reply(
        tool_calls=[
            call("delegate", {"worker": "a", "instructions": "go"}),
            call("delegate", {"worker": "b", "instructions": "go"}),
        ]
    )
    model = jeeves.ScriptedModel(
        {
            "lead": [delegate, "done"],
            "actor": ["draft", "draft"],
            "critic": ['{"score": 0.9}', '{"score": 0.9}'],
        }
    )
    result = await jeeves.run(jeeves.Supervisor({"a": pair(), "b": pair()}, role="lead"), "t", model=model)
    assert {k: u.model_calls for k, u in result.usage_by_role.items()} == {"lead": 2, "actor": 2, "critic": 2}
    assert {k: u.model_calls for k, u in result.usage_by_path.items()} == {
        "lead": 2,
        "lead.a.actor": 1,
        "lead.a.critic": 1,
        "lead.b.actor": 1,
        "lead.b.critic": 1,
    }


async def test_usage_books_are_the_same_with_and_without_a_journal() -> None:
    """Without a journal nothing is replayed, so the live books are the only ones kept; every
    usage map of the result, and every session's `session.completed` usage, match a run that
    keeps both books (a journal)."""
    from jeeves.events import SessionCompleted
    from jeeves.journal.memory import MemoryJournal
    from jeeves.messages import ModelRequest, ModelResponse, Usage

    def reply(request: ModelRequest) -> ModelResponse:
        critic = request.role_path[-1] == "critic"
        text = '{"score": 0.5, "issues": ["more"], "summary": "s"}' if critic else "draft"
        return ModelResponse(text=text, usage=Usage(input_tokens=3, output_tokens=2, cost_usd=0.01))

    def arch() -> jeeves.ActorCritic:
        return jeeves.ActorCritic(Agent("a", role="actor"), Agent("c", role="critic"), max_rounds=1)

    async def go(journal: MemoryJournal | None) -> tuple[jeeves.RunResult, list[Usage]]:
        model = FunctionModel(reply)
        async with jeeves.stream(arch(), "t", model=model, session_id="u1", journal=journal) as events:
            done = [e.usage async for e in events if isinstance(e, SessionCompleted)]
            return await events.result(), done

    bare, bare_done = await go(None)
    kept, kept_done = await go(MemoryJournal())
    assert bare.usage == kept.usage and bare.usage.model_calls == 4
    assert bare.usage_by_role == kept.usage_by_role and set(bare.usage_by_role) == {"actor", "critic"}
    assert bare.usage_by_path == kept.usage_by_path
    assert bare.usage_by_session == kept.usage_by_session and len(bare.usage_by_session) == 4
    assert bare_done == kept_done


async def test_run_without_a_reader_or_a_journal_does_not_ask_the_provider_to_stream() -> None:
    """`jeeves.run` with no journal has no reader of `model.delta` and no record of it, so
    the provider is asked without a delta sink (its non-streaming endpoint); a stream is."""
    from jeeves.messages import ModelRequest, ModelResponse
    from jeeves.models.base import DeltaSink

    sinks: list[bool] = []

    class Streaming:
        model_name = "streaming"

        async def complete(
            self, request: ModelRequest, *, on_delta: DeltaSink | None = None
        ) -> ModelResponse:
            sinks.append(on_delta is not None)
            if on_delta is not None:
                await on_delta("hi")
            return ModelResponse(text="hi")

    result = await jeeves.run(Agent("x"), "go", model=Streaming())
    assert result.output == "hi" and sinks == [False]
    async with jeeves.stream(Agent("x"), "go", model=Streaming()) as events:
        assert [e.type async for e in events].count("model.delta") == 1
    assert sinks == [False, True]


class _Halt(BaseException):
    """Not an Exception: not the reader's to swallow (as KeyboardInterrupt)."""


async def test_the_stream_surfaces_errors_as_themselves_never_as_a_group() -> None:
    """`stream` is a plain async context manager (no generators): the reader's own error
    leaves the block as itself on both backends (not a task group's ExceptionGroup), and a
    BaseException the run raised reaches the reader."""
    with pytest.raises(ValueError, match="the reader failed"):
        async with jeeves.stream(Agent("x"), "t", model=ScriptedModel(["hi"])) as events:
            async for _ in events:
                raise ValueError("the reader failed")

    class Halting:
        name = "halting"

        async def run(self, ctx: object, task: str) -> jeeves.Output:
            raise _Halt()

    with pytest.raises(_Halt):
        async with jeeves.stream(Halting(), "t") as events:  # type: ignore[arg-type]
            async for _ in events:
                pass
    with pytest.raises(_Halt):
        async with jeeves.stream(Halting(), "t") as events:  # type: ignore[arg-type]
            await events.result()


async def test_a_bad_architecture_ref_without_a_journal_fails_the_run_not_the_reader() -> None:
    """A journal-less run checks `architecture_ref=` as the journaled one does (it opens no
    journal, so the check runs as the run starts): the error reaches the reader, and
    nothing hangs."""
    model = ScriptedModel(["never"])
    with pytest.raises(UserError, match="has no attribute 'typo'"):
        await jeeves.run(Agent("x"), "t", model=model, architecture_ref="tests.journal.archs:typo")
    with pytest.raises(UserError, match="has no attribute 'typo'"):
        with anyio.fail_after(10):
            async with jeeves.stream(
                Agent("x"), "t", model=model, architecture_ref="tests.journal.archs:typo"
            ) as events:
                assert [e async for e in events] == []
    assert model.requests == []


async def test_the_result_carries_the_answer_once_and_detail_says_how_it_was_reached() -> None:
    from jeeves.architectures import ActorCriticOutput

    verdicts = ['{"score": 0.2, "issues": ["too short"]}', '{"score": 0.9, "issues": []}']
    model = ScriptedModel({"actor": ["draft", "final answer"], "critic": verdicts})
    arch = jeeves.ActorCritic(Agent("You write."), jeeves.LLMCritic())
    async with jeeves.stream(arch, "task", model=model, session_id="once") as events:
        completed = [e async for e in events if e.type == "session.completed" and e.session_id == "once"]
        result = await events.result()
    assert (result.output, result.text, completed[0].output) == ("final answer",) * 3  # the wire: as before
    detail = result.detail
    assert isinstance(detail, ActorCriticOutput)  # how: its own class, every round...
    assert ([r.score for r in detail.rounds], detail.best_round, detail.stop_reason) == (
        [0.2, 0.9],
        1,
        "approved",
    )
    assert (detail.value, detail.text) == (None, "")  # ...but not the answer a second time
    dumped = result.model_dump(mode="json")
    assert dumped["output"] == dumped["text"] == "final answer"
    assert "value" not in dumped["detail"] and "text" not in dumped["detail"]
    assert [r["text"] for r in dumped["detail"]["rounds"]] == ["draft", "final answer"]
    again = jeeves.RunResult.model_validate_json(result.model_dump_json())
    assert (again.output, again.text) == ("final answer", "final answer")
    assert again.detail is not None and again.detail.stop_reason == "approved"
