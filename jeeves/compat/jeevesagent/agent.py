"""jeevesagent's `Agent`: instructions, a model, tools, `max_turns` and an architecture,
run with `await agent.run(prompt)` or streamed with `agent.stream(prompt)`.

What runs is a jeeves run (`jeeves.stream`): the Agent becomes a jeeves architecture
(`as_jeeves()`): a plain Agent (or `ReAct`) is a jeeves `Agent` pinned to the Agent's
model; `architecture=ActorCritic(...)`, `SelfRefine(...)` or `Supervisor(...)` is that
architecture bound to this Agent (its instructions, model, tools and budget). The
result is jeevesagent's `RunResult` (`output`, `turns`, `interrupted`,
`interruption_reason`, `session_id`), with jeeves' own result on `jeeves_result`.

Options jeevesagent has and this layer does not (memory, runtime, permissions, hooks,
skills, ...) are a UserError naming the option, never silently dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from jeeves._base.validate import check_int, check_str
from jeeves._run.context import Architecture, Context, Output
from jeeves._run.runner import RunResult as JeevesRunResult
from jeeves._run.runner import stream as jeeves_stream
from jeeves.agent.agent import Agent as JeevesAgent
from jeeves.agent.tools import Tool
from jeeves.budget import Budget
from jeeves.compat.jeevesagent._interrupt import MAX_TURNS, interruption
from jeeves.compat.jeevesagent.events import Event, Translator
from jeeves.errors import MaxTurnsExceeded, UserError
from jeeves.events import Event as JeevesEvent
from jeeves.messages import Usage
from jeeves.models.base import ModelClient, Route

__all__ = ["DEFAULT_MAX_TURNS", "Agent", "Bindable", "ReAct", "RunResult"]

DEFAULT_MAX_TURNS = 50
"""jeevesagent's default turn limit."""


@runtime_checkable
class Bindable(Protocol):
    """A jeevesagent architecture of this layer (exported as `Architecture`): it has
    jeevesagent's `name` and `declared_workers()`, and becomes a jeeves architecture once
    it knows the Agent it runs for (`bind`)."""

    name: str

    def declared_workers(self) -> dict[str, Any]: ...

    def bind(self, host: Agent) -> Architecture: ...


class RunResult(BaseModel):
    """jeevesagent's result of `Agent.run`, with jeeves' own on `jeeves_result`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    session_id: str
    output: str
    turns: int
    """Model calls made, in the whole tree (jeevesagent's turns)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    interrupted: bool = False
    interruption_reason: str | None = None
    jeeves_result: JeevesRunResult | None = None
    """The jeeves RunResult (stop reason, rounds, delegations, usage by role); None when
    the run ended interrupted before producing one."""

    @classmethod
    def of(cls, result: JeevesRunResult, usage: Usage | None = None) -> RunResult:
        """From jeeves' result; `usage` is the root session's tree usage (replayed calls
        included, so a replay reports the same turns), by default the run's live usage."""
        interrupted, reason = interruption(result.detail)
        usage = usage or result.usage
        return cls(
            session_id=result.session_id,
            output=result.text,
            turns=usage.model_calls,
            tokens_in=usage.input_tokens,
            tokens_out=usage.output_tokens,
            cost_usd=usage.cost_usd,
            interrupted=interrupted,
            interruption_reason=reason,
            jeeves_result=result,
        )


class _Leaf(JeevesAgent):
    """A jeeves Agent that also takes jeevesagent's `max_turns=0` (no call allowed)."""

    def __init__(self, *, turns_allowed: int, **options: Any) -> None:
        super().__init__(max_turns=max(1, turns_allowed), **options)
        self.turns_allowed = turns_allowed

    async def run(self, ctx: Context, task: str) -> Output:
        if self.turns_allowed < 1:
            raise MaxTurnsExceeded(
                f"Agent in session {ctx.session_id!r} has max_turns={self.turns_allowed}: no model call allowed."
            )
        return await super().run(ctx, task)


class ReAct:
    """jeevesagent's default architecture: the model, with tools, until it answers."""

    name = "react"

    def __init__(self, *, max_turns: int | None = None) -> None:
        self.max_turns = (
            None if max_turns is None else check_int(max_turns, name="ReAct max_turns", minimum=0)
        )

    def declared_workers(self) -> dict[str, Any]:
        """None: one agent (jeevesagent's method)."""
        return {}

    def bind(self, host: Agent) -> Architecture:
        return _Leaf(
            instructions=host.instructions,
            tools=host.tools,
            model=host.route,
            turns_allowed=host.max_turns if self.max_turns is None else self.max_turns,
        )


_UNSUPPORTED_HINT = (
    "jeeves.compat.jeevesagent runs instructions, model, tools, max_turns, architecture and budget; "
    "see docs/coming-from-jeevesagent.md for the jeeves way to do the rest."
)


def _tools(tools: object) -> list[Tool | Callable[..., Any]]:
    if tools is None:
        return []
    if isinstance(tools, Tool) or (callable(tools) and not isinstance(tools, Sequence)):
        return [tools]
    if isinstance(tools, Sequence) and not isinstance(tools, str):
        return list(tools)
    raise UserError(f"Agent tools must be a list of tools or functions, got {tools!r}.")


def _architecture(architecture: object) -> Bindable:
    if architecture is None:
        return ReAct()
    if isinstance(architecture, str):
        from jeeves.compat.jeevesagent.self_refine import SelfRefine

        named: dict[str, Callable[[], Bindable]] = {"react": ReAct, "self-refine": SelfRefine}
        if architecture not in named:
            raise UserError(
                f"architecture={architecture!r} is not one this layer builds by name; use one of "
                f"{sorted(named)!r}, or pass the architecture object (ActorCritic(...), Supervisor(...))."
            )
        return named[architecture]()
    if not callable(getattr(architecture, "bind", None)):
        raise UserError(
            f"architecture={architecture!r} is not a jeevesagent architecture of this layer; pass ReAct(), "
            f"SelfRefine(...), ActorCritic(...) or Supervisor(...) from jeeves.compat.jeevesagent."
        )
    found: Bindable = architecture  # type: ignore[assignment]
    return found


class Agent:
    """jeevesagent's `Agent(instructions, model=, tools=, max_turns=, architecture=)`.

    Args:
        instructions: The system prompt.
        model: A model string (routed through litellm), a jeeves ModelClient (this
            layer's `ScriptedModel`, say) or None (the run's router decides).
        tools: Tools or typed functions the model may call.
        max_turns: Model calls allowed per run (0: none; an interrupted result).
        architecture: ReAct (default), SelfRefine, ActorCritic, Supervisor, or the
            names "react" / "self-refine".
        budget: A `jeeves.Budget` for the whole run, or a jeevesagent-style object with
            `allows_step()` (and `consume()`), checked between SelfRefine rounds.
    """

    def __init__(
        self,
        instructions: str,
        *,
        model: str | Route | ModelClient | None = None,
        tools: object = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        architecture: object = None,
        budget: object = None,
        **unsupported: object,
    ) -> None:
        if unsupported:
            raise UserError(f"Agent option(s) {sorted(unsupported)!r} are not supported. {_UNSUPPORTED_HINT}")
        self.instructions = check_str(instructions, name="Agent instructions")
        self.route = None if model is None else Route.coerce(model, key="agent (Agent model=)")
        self.tools = _tools(tools)
        self.max_turns = check_int(max_turns, name="Agent max_turns", minimum=0)
        self.architecture = _architecture(architecture)
        self.budget = budget
        if budget is not None and not isinstance(budget, Budget):
            if not hasattr(budget, "allows_step"):
                raise UserError(
                    f"Agent budget={budget!r} is neither a jeeves.Budget nor an object with allows_step(); "
                    f"e.g. budget=jeeves.Budget(max_tokens=20_000)."
                )
            if self.architecture.name != "self-refine":
                raise UserError(
                    f"Agent budget={budget!r} is a jeevesagent-style budget, which this layer checks between "
                    f"SelfRefine rounds only; for {self.architecture.name!r} pass a jeeves.Budget, which "
                    f"holds for the whole run."
                )

    def as_jeeves(self) -> Architecture:
        """The jeeves architecture this Agent runs as (as a child, or as the root of a run)."""
        return self.architecture.bind(self)

    async def run(self, prompt: str, *, session_id: str | None = None, **options: Any) -> RunResult:
        """Run to the end and return jeevesagent's RunResult.

        `options` are `jeeves.stream`'s (router, journal, mode, ...)."""
        result: RunResult | None = None
        async for event in self._events(prompt, session_id, options):
            if event.kind == "completed":
                result = RunResult.model_validate(event.payload["result"])
        assert result is not None
        return result

    async def stream(
        self, prompt: str, *, session_id: str | None = None, **options: Any
    ) -> AsyncIterator[Event]:
        """jeevesagent's events as the run goes (see `events.EVENT_NAMES`); the last one is
        `completed`, with the RunResult in its payload. Leaving the loop early cancels the run."""
        async for event in self._events(prompt, session_id, options):
            yield event

    async def _events(
        self, prompt: str, session_id: str | None, options: dict[str, Any]
    ) -> AsyncIterator[Event]:
        arch = self.as_jeeves()
        translator = Translator(lambda path: _workers_at(arch, path[1:]))
        if isinstance(self.budget, Budget):
            options.setdefault("budget", self.budget)
        outcome: RunResult
        async with jeeves_stream(arch, prompt, session_id=session_id, **options) as events:
            failed: dict[str, JeevesEvent] = {}
            usage: Usage | None = None
            try:
                async for event in events:
                    if event.type == "session.failed":
                        failed[event.session_id] = event
                    elif event.type == "session.completed" and event.session_id == translator.root:
                        usage = event.usage
                    for translated in translator.feed(event):
                        yield translated
                outcome = RunResult.of(await events.result(), usage)
            except MaxTurnsExceeded as exc:
                outcome = _out_of_turns(exc, translator.root, failed)
        payload = {
            "result": {
                **outcome.model_dump(exclude={"jeeves_result"}),
                "jeeves_result": outcome.jeeves_result,
            }
        }
        yield Event(kind="completed", session_id=outcome.session_id, payload=payload)


def _out_of_turns(exc: MaxTurnsExceeded, root: str | None, failed: Mapping[str, JeevesEvent]) -> RunResult:
    """The root agent ran out of turns: jeevesagent's interrupted result, not an exception."""
    if root is None or exc.session_id != root:
        raise exc
    usage = getattr(failed.get(root), "usage", None)
    return RunResult(
        session_id=root,
        output="",
        turns=usage.model_calls if usage else 0,
        tokens_in=usage.input_tokens if usage else 0,
        tokens_out=usage.output_tokens if usage else 0,
        interrupted=True,
        interruption_reason=MAX_TURNS,
    )


def _workers_at(arch: object, path: Sequence[str]) -> list[str]:
    """The worker names of the Supervisor at role path `path` below `arch` (for events)."""
    node: object = arch
    for role in path:
        workers = getattr(node, "workers", None)
        node = workers.get(role) if isinstance(workers, Mapping) else getattr(node, role, None)
    workers = getattr(node, "workers", None)
    return list(workers) if isinstance(workers, Mapping) else []
