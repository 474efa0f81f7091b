"""jeevesagent's `Supervisor`, running as jeeves' Supervisor.

As in jeevesagent: the coordinator is the Agent's own model, its system prompt the
Agent's instructions, then `---`, then the supervisor template listing each worker with
its instructions; it has the Agent's own tools next to `delegate(worker, instructions)`
and `forward_message(worker)` (both renamable, both with the worker names as an enum);
workers see only the instructions they are given; several delegations in one reply run
in parallel; an unknown worker is a tool error the model reads; and after a
`forward_message` the coordinator finishes its turn, then the forwarded worker's output
replaces its final reply.

What runs is jeeves' delegation (`jeeves.architectures.delegation`): each delegation is
a child session `{supervisor}__{worker}_{k}` (jeevesagent used a random suffix), with
`delegation.*` events, journaled and replayed like every session.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jeeves._base.ids import validate_name
from jeeves._run.context import Architecture, Context, Output
from jeeves.agent.agent import Agent as JeevesAgent
from jeeves.agent.agent import run_tool_calls
from jeeves.agent.tools import ToolOutcome
from jeeves.architectures.delegation import Delegation, Ledger, run_turn, worker_prompt
from jeeves.architectures.supervisor import Supervisor as _Supervisor
from jeeves.compat.jeevesagent._convert import as_architecture
from jeeves.compat.jeevesagent._interrupt import MAX_TURNS, CompatOutput
from jeeves.errors import UserError
from jeeves.messages import Message, ToolCall, ToolSpec

if TYPE_CHECKING:
    from jeeves.compat.jeevesagent.agent import Agent

__all__ = ["DEFAULT_SUPERVISOR_TEMPLATE", "Supervisor"]

DEFAULT_SUPERVISOR_TEMPLATE = """\
You are a supervisor coordinating specialist worker agents.

For each task you receive:
1. Decide which workers are needed.
2. Call `delegate(worker, instructions)` to invoke a specialist.
3. Each worker runs independently and returns its final answer.
4. Either synthesize worker outputs into a unified response, OR
   call `forward_message(worker)` if a single worker's output IS
   already the final answer the user wants. Forwarding skips a
   paraphrase round-trip: the worker's output is returned verbatim
   as YOUR final response. End your turn immediately after a
   forward_message call.

You can delegate multiple workers in a single turn — they will run
in parallel. Be specific in the ``instructions`` you pass; workers
do NOT see the user's original message, only what you write.

Available workers:
{worker_descriptions}
"""
"""jeevesagent's supervisor template (Apache-2.0), verbatim: `{worker_descriptions}`."""

_UNLIMITED = 1_000_000
"""jeevesagent puts no cap on delegations."""


def _instructions_of(worker: object) -> str:
    return str(getattr(worker, "instructions", "") or getattr(worker, "description", "") or "").strip()


def _check_workers(workers: object) -> dict[str, Any]:
    if not isinstance(workers, Mapping) or not workers:
        raise UserError(f"Supervisor requires at least one worker, got workers={workers!r}.")
    for name in workers:
        validate_name(name, what="worker")
    return dict(workers)


class Supervisor:
    """jeevesagent's `Supervisor(workers=, base=, instructions_template=, delegate_tool_name=, forward_tool_name=)`.

    Args:
        workers: Worker name → Agent (this layer's, or any jeeves architecture). Names
            follow jeeves' role-name rule (`[a-z][a-z0-9_]*`, no `__`).
        base: None or ReAct(): the coordinator is the Agent's model and tools.
        instructions_template: The supervisor section, with `{worker_descriptions}`.
        delegate_tool_name: The delegate tool's name.
        forward_tool_name: The forward tool's name.
    """

    name = "supervisor"

    def __init__(
        self,
        *,
        workers: Mapping[str, Any],
        base: Any = None,
        instructions_template: str | None = None,
        delegate_tool_name: str = "delegate",
        forward_tool_name: str = "forward_message",
    ) -> None:
        from jeeves.compat.jeevesagent.agent import ReAct

        self.workers = _check_workers(workers)
        if base is not None and not isinstance(base, ReAct):
            raise UserError(
                f"Supervisor base={base!r}: this layer runs the coordinator as ReAct only; leave base unset."
            )
        self.base = base
        self.template = instructions_template or DEFAULT_SUPERVISOR_TEMPLATE
        if "{worker_descriptions}" not in self.template:
            raise UserError(
                f"instructions_template must contain {{worker_descriptions}}, got {self.template!r}."
            )
        if not delegate_tool_name or delegate_tool_name == forward_tool_name or not forward_tool_name:
            raise UserError(
                f"delegate_tool_name={delegate_tool_name!r} and forward_tool_name={forward_tool_name!r} must be "
                f"two different, non-empty names."
            )
        self.delegate_tool_name, self.forward_tool_name = delegate_tool_name, forward_tool_name

    def declared_workers(self) -> dict[str, Any]:
        """The workers as they were given (jeevesagent's method)."""
        return dict(self.workers)

    def add_worker(self, name: str, agent: Any) -> None:
        """Register a worker for the next run."""
        self.workers[validate_name(name, what="worker")] = agent

    def remove_worker(self, name: str) -> Any:
        """Unregister a worker; the removed one, or None."""
        return self.workers.pop(name, None)

    def section(self) -> str:
        """The supervisor section of the coordinator's system prompt."""
        lines = []
        for name, worker in self.workers.items():
            desc = _instructions_of(worker)
            desc = desc[:197] + "..." if len(desc) > 200 else desc
            lines.append(f"  - {name}: {desc or '(no description)'}")
        return self.template.format(worker_descriptions="\n".join(lines))

    def bind(self, host: Agent) -> Architecture:
        return _Bound(self, host)


class _Bound(_Supervisor):
    """A Supervisor bound to its Agent: jeeves' Supervisor with jeevesagent's prompt and tools."""

    name = "supervisor"

    def __init__(self, spec: Supervisor, host: Agent) -> None:
        self.spec = spec
        self.own_tools = JeevesAgent("(the supervisor's own tools)", tools=host.tools)
        taken = {t.name for t in self.own_tools.tools} & {spec.delegate_tool_name, spec.forward_tool_name}
        if taken:
            raise UserError(
                f"The Agent has a tool named {sorted(taken)!r}, which the Supervisor's tools also use; "
                f"rename yours or pass delegate_tool_name= / forward_tool_name=."
            )
        instructions = spec.section()
        if host.instructions:
            instructions = f"{host.instructions}\n\n---\n\n{instructions}"
        super().__init__(
            {name: as_architecture(w, what=f"worker {name!r}") for name, w in spec.workers.items()},
            instructions=instructions,
            share_task=False,
            max_turns=max(1, host.max_turns),
            model=host.route,
            max_delegations=_UNLIMITED,
        )

    def _build_tool_specs(self) -> list[ToolSpec]:
        names = list(self.workers)
        roster = "\n".join(f"  - {n}: {_instructions_of(self.spec.workers[n])[:120]}" for n in names)
        worker = {
            "type": "string",
            "enum": names,
            "description": f"Name of the worker to delegate to. Must be one of: {', '.join(names)}.",
        }
        delegate = ToolSpec(
            name=self.spec.delegate_tool_name,
            description=(
                "Delegate a subtask to a named specialist worker. The worker runs independently and "
                f"returns its final answer as a string.\n\nAvailable workers:\n{roster}"
            ),
            parameters={
                "type": "object",
                "properties": {
                    "worker": worker,
                    "instructions": {
                        "type": "string",
                        "description": (
                            "Task description for the worker. Be specific — the worker does not see the "
                            "user's original message."
                        ),
                    },
                },
                "required": ["worker", "instructions"],
            },
        )
        forward = ToolSpec(
            name=self.spec.forward_tool_name,
            description=(
                "Return a worker's last delegated output VERBATIM as the supervisor's final response. Use "
                "this when one worker already produced exactly what the user asked for and synthesis would "
                "just paraphrase it. End your turn immediately after calling — no additional text."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "worker": {
                        **worker,
                        "description": (
                            "Name of the worker whose last output should be forwarded. Must be one of: "
                            f"{', '.join(names)}."
                        ),
                    }
                },
                "required": ["worker"],
            },
        )
        return [*(t.spec() for t in self.own_tools.tools), delegate, forward]

    async def _dispatch(
        self, ctx: Context, calls: Sequence[ToolCall], ledger: Ledger, task: str
    ) -> tuple[list[ToolOutcome], Delegation | None]:
        """Run one reply's calls: the Agent's own tools, then delegations and forwards (as jeeves' names)."""
        renamed = {self.spec.delegate_tool_name: "delegate", self.spec.forward_tool_name: "forward"}
        team = [i for i, c in enumerate(calls) if c.name in renamed]
        own = [i for i, c in enumerate(calls) if c.name not in renamed]
        outcomes: dict[int, ToolOutcome] = {}
        if own:
            done = await run_tool_calls(self.own_tools, ctx, [calls[i] for i in own])
            outcomes.update(zip(own, done, strict=True))
        chosen = None
        if team:
            prompt = functools.partial(worker_prompt, task=task, share_task=False)
            jeeves_calls = [calls[i].model_copy(update={"name": renamed[calls[i].name]}) for i in team]
            done, chosen = await run_turn(ctx, jeeves_calls, self.workers, ledger, prompt)
            outcomes.update(zip(team, done, strict=True))
        return [outcomes[i] for i in range(len(calls))], chosen

    async def run(self, ctx: Context, task: str) -> Output:  # type: ignore[override]
        ledger = Ledger(self.max_delegations, delegate_mode=self.delegate_approval)
        messages = [Message.system(self.instructions), Message.user(task)]
        forwarded: Delegation | None = None
        for _turn in range(self.max_turns):
            response = await ctx.call_model(self._request(messages), route=self.route)
            messages.append(
                Message(role="assistant", content=response.text or None, tool_calls=response.tool_calls)
            )
            if not response.tool_calls:
                if forwarded is not None and forwarded.output is not None:
                    return self._finish(
                        ctx, ledger, forwarded.output, "forwarded", forwarded_from=forwarded.session_id
                    )
                return self._finish(ctx, ledger, Output.of(response.text), "completed")
            outcomes, chosen = await self._dispatch(ctx, response.tool_calls, ledger, task)
            messages.extend(
                Message(role="tool", content=o.text, tool_call_id=c.id, name=c.name)
                for c, o in zip(response.tool_calls, outcomes, strict=True)
            )
            forwarded = chosen or forwarded
        return CompatOutput(
            value="", text="", stop_reason="interrupted", interrupted=True, interruption_reason=MAX_TURNS
        )
