"""Record, replay, resume end to end: `jeeves.run(journal=...)`, `jeeves.replay`, a second run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import ActorCritic, Agent, Budget, FunctionModel, LLMCritic, Route, ScriptedModel
from jeeves._run.context import Architecture
from jeeves.errors import CriticError, ProviderError, ReplayDivergence
from jeeves.events import Event
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import fingerprint
from jeeves.journal.store import JournalStore
from jeeves.messages import ModelRequest
from jeeves.testing import Reply
from tests.journal import archs
from tests.journal.conftest import Stores, postgres_rows

pytestmark = pytest.mark.anyio


@pytest.fixture
def armed() -> Iterator[None]:
    archs.ARMED["tools"] = True
    try:
        yield
    finally:
        archs.ARMED["tools"] = False


def per_session(events: list[Event]) -> dict[str, list[dict[str, Any]]]:
    """Each session's events in order, without the fields a replay may change."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        out[event.session_id].append(event.model_dump(mode="json", exclude={"ts", "seq", "replayed"}))
    return dict(out)


async def collect(arch: Architecture, task: str, **kwargs: Any) -> tuple[list[Event], jeeves.RunResult]:
    async with jeeves.stream(arch, task, **kwargs) as events:
        seen = [e async for e in events]
        return seen, await events.result()


@pytest.mark.parametrize("build", [archs.build_agent, archs.build_fanout], ids=["agent", "fanout"])
async def test_replay_events_equal_the_recording_for_every_session(stores: Stores, build: Any) -> None:
    journal = stores.open()
    live, recorded = await collect(
        build(), "count these", model=archs.model(), journal=journal, session_id="r1"
    )
    replayed, result = await collect(
        build(), "count these", journal=stores.open(), session_id="r1", mode="replay"
    )

    assert per_session(replayed) == per_session(live)
    assert len(per_session(live)) == (1 if build is archs.build_agent else 4)
    assert {e.type for e in live} >= {"tool.started", "tool.completed", "model.delta", "model.completed"}
    assert all(e.replayed for e in replayed) and not any(e.replayed for e in live)
    assert result.text == recorded.text
    # events report the usage of the calls they describe; the result counts what was spent
    assert recorded.usage.model_calls > 0 and result.usage == jeeves.Usage()
    completed = [e for e in replayed if e.type == "session.completed" and e.session_id == "r1"]
    assert completed[0].usage == recorded.usage


async def test_a_supervisor_with_a_parallel_actor_critic_replays_event_for_event(stores: Stores) -> None:
    live, recorded = await collect(
        archs.build_team(),
        "add and count",
        models=archs.team_models(),
        journal=stores.open(),
        session_id="t1",
    )
    replayed, result = await collect(
        archs.build_team(), "add and count", journal=stores.open(), session_id="t1", mode="replay"
    )

    sessions = per_session(live)
    assert {"t1__coder_0__actor_1", "t1__coder_0__critic_1", "t1__helper_0"} <= set(sessions)
    assert {"critique", "delegation.started", "round.started", "tool.completed"} <= {e.type for e in live}
    assert per_session(replayed) == sessions
    assert result.text == recorded.text and "def add(a, b): return a + b" in result.text
    assert result.usage.model_calls == 0 < recorded.usage.model_calls


async def test_replay_reaches_no_model_and_no_tool(stores: Stores, armed: None) -> None:
    archs.ARMED["tools"] = False
    recorder = archs.model()
    agent = Agent("You add and shout.", role="adder", tools=[archs.add, archs.shout], model=recorder)
    recorded = await jeeves.run(agent, "count these", journal=stores.open(), session_id="r1")
    calls = len(recorder.requests)
    assert calls == 3

    archs.ARMED["tools"] = True  # from here on, any tool call fails the test
    result = await jeeves.replay(agent, stores.open(), "r1")  # the agent is pinned to `recorder`

    assert len(recorder.requests) == calls
    assert result.text == recorded.text
    assert result.usage.model_calls == 0


async def test_replay_rebuilds_the_architecture_from_its_recorded_reference(stores: Stores) -> None:
    recorded = await jeeves.run(
        archs.build_fanout(),
        "count these",
        model=archs.model(),
        journal=stores.open(),
        session_id="r1",
        architecture_ref="tests.journal.archs:build_fanout",
    )
    result = await jeeves.replay(None, stores.open(), "r1")
    assert result.text == recorded.text
    assert set(result.usage_by_session) == set()


async def test_a_changed_request_diverges_with_a_diff(stores: Stores) -> None:
    await jeeves.run(
        archs.build_agent(), "count these", model=archs.model(), journal=stores.open(), session_id="r1"
    )
    changed = Agent("You add and shout loudly.", role="adder", tools=[archs.add, archs.shout])

    with pytest.raises(ReplayDivergence) as info:
        await jeeves.replay(changed, stores.open(), "r1")

    error = info.value
    assert (error.session_id, error.step) == ("r1", 0)
    assert '-   "content": "You add and shout."' in str(error)
    assert '+   "content": "You add and shout loudly."' in str(error)


async def test_a_step_the_journal_lacks_diverges(stores: Stores) -> None:
    await jeeves.run(archs.Steps(2), "t", journal=stores.open(), session_id="r1")
    with pytest.raises(
        ReplayDivergence, match=r"step 2 \(function 'work'\), which the journal does not hold"
    ) as info:
        await jeeves.replay(archs.Steps(3), stores.open(), "r1")
    assert (info.value.session_id, info.value.step) == ("r1", 2)


async def test_a_recorded_step_left_unused_diverges(stores: Stores) -> None:
    await jeeves.run(archs.Steps(3), "t", journal=stores.open(), session_id="r1")
    with pytest.raises(
        ReplayDivergence, match="step 2 of session 'r1', which the replay never asked for"
    ) as info:
        await jeeves.replay(archs.Steps(2), stores.open(), "r1")
    assert (info.value.session_id, info.value.step) == ("r1", 2)


class _LoudFanout(archs.Fanout):
    """The fan-out whose workers are asked for their part loudly: every child's request differs."""

    async def run(self, ctx: jeeves.Context, task: str) -> jeeves.Output:
        return await super().run(ctx, f"{task}, loudly")


async def test_a_divergence_in_children_of_a_task_group_is_what_the_replay_raises(stores: Stores) -> None:
    """Children run in the architecture's own task group fail the root with a group. The
    root's end check must not replace their divergence with its own (the root's steps left
    unused, "a shorter path"), which would point at the wrong session and step."""
    await jeeves.run(
        archs.build_fanout(), "count these", model=archs.model(), journal=stores.open(), session_id="r1"
    )

    with pytest.raises(BaseExceptionGroup) as info:
        await jeeves.replay(_LoudFanout(), stores.open(), "r1")

    leaves = info.value.exceptions
    assert leaves and all(isinstance(e, ReplayDivergence) for e in leaves), leaves
    assert {(e.session_id, e.step) for e in leaves} <= {(f"r1__worker_{i}", 0) for i in range(3)}
    assert all("count these part" in str(e) and "loudly" in str(e) for e in leaves)


class _Clock:
    """Decides its output outside any journaled step: the replay cannot be trusted to match."""

    name = "clock"

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, ctx: jeeves.Context, task: str) -> jeeves.Output:
        self.calls += 1
        return jeeves.Output.of(f"call {self.calls}")


async def test_another_final_output_diverges() -> None:
    journal = MemoryJournal()
    clock = _Clock()
    await jeeves.run(clock, "t", journal=journal, session_id="r1")
    with pytest.raises(ReplayDivergence, match=r"-\"call 1\"\n\+\"call 2\"") as info:
        await jeeves.replay(clock, journal, "r1")
    assert (info.value.session_id, info.value.step) == ("r1", -1)


async def test_a_recorded_failure_replays_as_the_same_failure(stores: Stores) -> None:
    failing = ScriptedModel([ProviderError("the provider is down", status_code=400)])
    live: list[Event] = []
    with pytest.raises(ProviderError):
        async with jeeves.stream(
            Agent("x"), "t", model=failing, journal=stores.open(), session_id="r1"
        ) as events:
            async for event in events:
                live.append(event)

    replayed: list[Event] = []
    with pytest.raises(ProviderError, match="the provider is down") as info:
        async with jeeves.stream(
            Agent("x"), "t", journal=stores.open(), session_id="r1", mode="replay"
        ) as events:
            async for event in events:
                replayed.append(event)
    assert info.value.session_id == "r1"
    assert per_session(replayed) == per_session(live)
    assert live[-1].type == "session.failed"


async def test_resume_makes_a_failed_model_call_again_and_serves_the_rest(stores: Stores) -> None:
    asked: list[ModelRequest] = []

    def outage(request: ModelRequest) -> Reply:
        asked.append(request)
        if len(asked) >= 3:  # and on every retry
            raise ProviderError("the key was revoked", status_code=401)
        return archs.reply(request)

    broken = FunctionModel(outage, model_name="fixture-model")
    with pytest.raises(ProviderError):
        await jeeves.run(
            archs.build_agent(), "count these", model=broken, journal=stores.open(), session_id="r1"
        )
    fixed = archs.model()
    resumed, result = await collect(
        archs.build_agent(), "count these", model=fixed, journal=stores.open(), session_id="r1"
    )
    served = [e for e in resumed if e.type == "model.completed" and e.replayed]
    assert len(served) == 2  # the two calls that completed; the failed third is made again
    assert fixed.requests[0].messages == asked[2].messages
    assert result.usage.model_calls == len(fixed.requests) and result.stop_reason == "completed"
    replayed, again = await collect(
        archs.build_agent(), "count these", journal=stores.open(), session_id="r1", mode="replay"
    )
    assert again.text == result.text  # the journal now holds the run that completed


async def test_a_budget_stop_replays_without_spending(stores: Stores) -> None:
    live, recorded = await collect(
        archs.build_agent(),
        "count these",
        model=archs.model(),
        budget=Budget(max_model_calls=1),
        journal=stores.open(),
        session_id="r1",
    )
    replayed, result = await collect(
        archs.build_agent(), "count these", journal=stores.open(), session_id="r1", mode="replay"
    )
    assert recorded.stop_reason == result.stop_reason == "budget"
    assert "budget.exceeded" in [e.type for e in replayed]
    assert per_session(replayed) == per_session(live)


async def test_resume_serves_recorded_steps_and_runs_the_rest_live(stores: Stores) -> None:
    uninterrupted = await jeeves.run(
        archs.build_fanout(), "count these", model=archs.model(), session_id="r0"
    )

    answered: list[ModelRequest] = []
    stalled = anyio.Event()

    async def stalls_after_four(request: ModelRequest) -> Reply:
        if len(answered) == 4:
            stalled.set()
            await anyio.sleep_forever()  # the run is stopped while these calls are in flight
        answered.append(request)
        return archs.reply(request)

    first = FunctionModel(stalls_after_four)
    completed = 0
    async with jeeves.stream(
        archs.build_fanout(), "count these", model=first, journal=stores.open(), session_id="r1"
    ) as events:
        async for event in events:
            completed += event.type == "model.completed"
            if completed == 4:
                await stalled.wait()
                break  # leaving the block cancels the run, as a crash would stop it
    in_flight = len(first.requests) - 4
    assert in_flight > 0

    second = archs.model()
    resumed, result = await collect(
        archs.build_fanout(), "count these", model=second, journal=stores.open(), session_id="r1"
    )

    served = [e for e in resumed if e.type == "model.completed" and e.replayed]
    assert len(served) == 4
    assert len(second.requests) == 9 - 4
    done_before = {r.model_dump_json(include={"messages"}) for r in answered}
    assert not done_before & {r.model_dump_json(include={"messages"}) for r in second.requests}
    assert result.text == uninterrupted.text
    assert result.usage.model_calls == 5


async def test_running_a_finished_session_again_serves_everything(stores: Stores) -> None:
    recorded = await jeeves.run(
        archs.build_agent(), "count these", model=archs.model(), journal=stores.open(), session_id="r1"
    )
    again = await jeeves.run(
        archs.build_agent(),
        "count these",
        model=FunctionModel(_never),
        journal=stores.open(),
        session_id="r1",
    )
    assert again.text == recorded.text
    assert again.usage.model_calls == 0


def _never(request: object) -> str:
    raise AssertionError("a resumed run called the model for a recorded step")


async def test_a_resumed_run_keeps_its_recorded_reference(stores: Stores) -> None:
    ref = "tests.journal.archs:build_agent"
    await jeeves.run(
        archs.build_agent(),
        "count these",
        model=archs.model(),
        journal=stores.open(),
        session_id="r1",
        architecture_ref=ref,
    )
    await jeeves.run(
        archs.build_agent(), "count these", model=archs.model(), journal=stores.open(), session_id="r1"
    )
    record = await stores.open().get_session("r1")
    assert record is not None and record.source == {"kind": "import", "ref": ref}


async def test_journal_paths_open_the_matching_store(tmp_path: Any) -> None:
    for name in ("runs.jsonl", "runs.db"):
        path = tmp_path / name
        recorded = await jeeves.run(
            archs.build_agent(), "count these", model=archs.model(), journal=path, session_id="r1"
        )
        result = await jeeves.replay(archs.build_agent(), str(path), "r1")
        assert result.text == recorded.text
    assert (tmp_path / "runs.jsonl").read_text().startswith('{"type":"session"')
    assert (tmp_path / "runs.db").read_bytes().startswith(b"SQLite format 3")


KEY_A = "sk-rotated-away-1111111111"
KEY_B = "sk-rotated-in-2222222222"


def _keyed(key: str, instructions: str = "You write.") -> ActorCritic:
    """An actor and a critic with `key` in their params and an Authorization header."""
    headers = {"extra_headers": {"Authorization": f"Bearer {key}", "X-Trace": "t"}}
    actor = Agent(instructions, role="writer", params={"api_key": key, "temperature": 0, **headers})
    critic = LLMCritic("You review.", params={"api_key": key, **headers})
    return ActorCritic(actor, critic, max_rounds=1, on_critic_error="raise")


def _route(key: str, model: FunctionModel) -> Route:
    return Route(
        model="openai/gpt-4o-mini", client=model, params={"api_key": key}, fallbacks=("openai/gpt-4o",)
    )


def _answer(request: ModelRequest) -> Reply:
    if request.output_schema is not None:
        return Reply(text='{"score": 0.9, "issues": [], "summary": "fine"}')
    return Reply(text="A draft.")


def _critic_down(request: ModelRequest) -> Reply:
    if request.output_schema is not None:
        raise ProviderError("the critic's provider is down", status_code=503)
    return _answer(request)


async def _journal_text(stores: Stores, journal: JournalStore) -> str:
    """Everything the journal holds, as its records and (for file stores) its bytes."""
    sessions = await journal.sessions()
    steps = [
        await journal.get_step(r.session_id, i)
        for r in sessions
        for i in await journal.step_indices(r.session_id)
    ]
    text = "\n".join(r.model_dump_json() for r in [*sessions, *steps] if r is not None)
    if isinstance(stores.path, str):  # a database: every row's text as stored
        return text + "\n".join(postgres_rows(stores.path))
    files = sorted(stores.path.parent.glob(stores.path.name + "*"))
    return text + "\n".join(f.read_bytes().decode("utf-8", "replace") for f in files)


async def test_a_run_resumed_after_the_key_rotated_goes_on_and_no_journal_holds_a_key(stores: Stores) -> None:
    down = FunctionModel(_critic_down)
    with pytest.raises(CriticError):
        await jeeves.run(
            _keyed(KEY_A), "Write.", model=_route(KEY_A, down), journal=stores.open(), session_id="k1"
        )
    assert len(down.requests) > 1  # the actor's call was made and recorded, then the critic failed

    live = FunctionModel(_answer)
    result = await jeeves.run(
        _keyed(KEY_B), "Write.", model=_route(KEY_B, live), journal=stores.open(), session_id="k1"
    )

    assert result.stop_reason == "approved"
    assert [r.output_schema is not None for r in live.requests] == [True]  # only the critic ran again
    assert live.requests[0].params["api_key"] == KEY_B  # the provider got the new key
    assert live.requests[0].params["extra_headers"]["Authorization"] == f"Bearer {KEY_B}"
    recorded = await _journal_text(stores, stores.open())
    assert '"temperature":0' in recorded.replace(" ", "")  # other params are journaled
    assert KEY_A not in recorded and KEY_B not in recorded


async def test_a_divergence_shows_the_changed_request_without_its_keys(stores: Stores) -> None:
    await jeeves.run(
        _keyed(KEY_A),
        "Write.",
        model=_route(KEY_A, FunctionModel(_answer)),
        journal=stores.open(),
        session_id="k1",
    )
    with pytest.raises(ReplayDivergence) as info:
        await jeeves.replay(_keyed(KEY_B, "You write tersely."), stores.open(), "k1")

    message = str(info.value)
    assert '+   "content": "You write tersely."' in message
    assert KEY_A not in message and KEY_B not in message


async def test_a_journal_that_recorded_a_key_diverges_without_showing_it() -> None:
    journal = MemoryJournal()
    agent = Agent("x", params={"api_key": KEY_A})
    await jeeves.run(agent, "t", model=ScriptedModel(["ok"]), journal=journal, session_id="k1")
    step = await journal.get_step("k1", 0)
    assert step is not None and KEY_A not in step.model_dump_json()
    # as journals were written when a request's params went into it whole
    old = {**step.request, "params": {"api_key": KEY_A}}
    await journal.put_step(step.model_copy(update={"request": old, "fingerprint": fingerprint(old)}))

    with pytest.raises(ReplayDivergence) as info:
        await jeeves.replay(agent, journal, "k1")
    assert '-  "api_key": "<redacted>"' in str(info.value)
    assert KEY_A not in str(info.value)
