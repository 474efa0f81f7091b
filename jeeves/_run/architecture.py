"""The Architecture protocol and the Output every architecture returns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from jeeves._run.context import Context

__all__ = ["Architecture", "Caller", "Output", "join_callers", "model_callers"]

RolePath = tuple[str, ...]


class Output(BaseModel):
    """What an architecture returns to whoever ran it.

    `value` is the typed result (a str, or an instance of an Agent's `output_type`);
    `text` is its text form, which parents put into prompts and events. Architectures
    subclass it to add what they know (rounds and verdicts, delegations).
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    value: Any = None
    text: str = ""
    stop_reason: str = "completed"
    """completed, approved, max_rounds, no_improvement, budget, critic_failed, forwarded…"""

    @classmethod
    def of(
        cls, value: Any, *, text: str | None = None, stop_reason: str = "completed", **fields: Any
    ) -> Self:
        """An Output of `value`: how an architecture returns its answer.

        ```python
        return Output.of(answer)  # text: the answer itself
        return DebateOutput.of(answer, stop_reason="judged", turns=turns)  # a subclass's fields
        ```

        `text` defaults to `value` itself (a str), its JSON (a pydantic model) or `str(value)`;
        `fields` fill a subclass's own fields (rounds, verdicts...).
        """
        if text is None:
            if isinstance(value, str):
                text = value
            elif isinstance(value, BaseModel):
                text = value.model_dump_json()
            else:
                text = str(value)
        return cls(value=value, text=text, stop_reason=stop_reason, **fields)


@runtime_checkable
class Architecture(Protocol):
    """Anything that runs a task in a Context and returns an Output.

    An architecture reports progress with `await ctx.emit(event)` and runs children with
    `await ctx.run(child, task, role=..., index=...)`; it never makes ids, reads clocks or
    draws random numbers itself, so a replay takes the same path.
    """

    name: str
    """The architecture's kind, shown in `session.started` (agent, actor_critic, …)."""

    async def run(self, ctx: Context, task: str) -> Output: ...


def describe_model(arch: object, ctx: Context) -> str | None:
    """The model an architecture calls itself, if it says (Agents do); None otherwise."""
    describe = getattr(arch, "describe_model", None)
    return describe(ctx) if callable(describe) else None


class Caller(NamedTuple):
    """A session that calls a model, as an architecture tree would run it.

    `path` is the session's role path (what a ScriptedModel's keys match); `routed` is
    the role path the router resolves for its calls (a child run with `share_route=True`
    resolves its parent's), or None when the session pins its own model.
    """

    path: RolePath
    routed: RolePath | None


def model_callers(node: object, path: RolePath, routed: RolePath | None = None) -> list[Caller] | None:
    """Every session under `node` (run at role path `path`) that calls a model.

    Built-in architectures and critics answer through a `model_callers(path, routed)`
    method, whose answer does not depend on the task: they always run the same kinds
    of children under the same roles. None when some node in the tree does not say
    (an architecture or critic of the user's own), so nothing can be concluded from it.
    `routed` is the path the node's own calls resolve as; unset, `path`.
    """
    method = getattr(node, "model_callers", None)
    if not callable(method):
        return None
    found: list[Caller] | None = method(path, path if routed is None else routed)
    return found


def join_callers(parts: Iterable[list[Caller] | None]) -> list[Caller] | None:
    """The callers of several children together; None if any of them cannot say."""
    joined: list[Caller] = []
    for part in parts:
        if part is None:
            return None
        joined += part
    return joined
