"""jeevesagent's `ActorCritic`, running as jeeves' own ActorCritic.

Code written for jeevesagent 0.9's ActorCritic runs unchanged: the same keyword
constructor, defaults, prompt templates (rendered as jeevesagent renders them), critique
parsing (`parse_critique`: a score clamped into [0, 1], a prose critique kept as the
issue), `name` (`actor-critic`), `declared_workers()`, and interrupted results (an actor
or critic out of turns returns `interrupted=True` with reason
`actor:round_0:max_turns_exceeded`; it does not raise).

```python
from jeeves.compat.jeevesagent import ActorCritic, Agent

arch = ActorCritic(
    actor=Agent("You write Python.", model="anthropic/claude-sonnet-4-5"),
    critic=Agent("You review Python.", model="openai/gpt-4o"),
    max_rounds=3,
    approval_threshold=0.9,
)
result = await Agent("host", architecture=arch).run("Write slugify(text).")
# or, for jeeves' events, journal and replay: await jeeves.run(arch, "Write slugify(text).")
```

- `max_rounds` counts reviews, as in jeevesagent: jeeves' own `max_rounds` counts
  revisions, so this one is jeeves' `max_rounds - 1`.
- `approval_threshold` (default 0.9) is jeeves' `threshold`.
- `critique_template` fills `{prompt}` and `{output}`; `refine_template` also
  `{critique}` (the verdict's summary) and `{issues_bulleted}` (`- issue` lines, or
  jeevesagent's sentence when there are none). Any other placeholder is a UserError.
- The critic Agent is run as jeevesagent runs it (`JeevesagentCritic`): its
  instructions as they are, its model, params and `max_turns`.

What runs is jeeves' loop, so jeeves' behaviour holds where jeevesagent's differed; each
difference is listed, with its reason, in docs/coming-from-jeevesagent.md.

The two default templates are jeevesagent's own text (Apache-2.0), kept verbatim so
that prompts render identically.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Sequence
from typing import Any

from jeeves._run.context import Architecture, Context
from jeeves.agent.agent import Agent as JeevesAgent
from jeeves.architectures._templates import PromptFields, PromptRenderer
from jeeves.architectures.actor_critic import ActorCritic as _ActorCritic
from jeeves.architectures.critic_loop import CriticLoop
from jeeves.compat.jeevesagent._convert import as_architecture
from jeeves.compat.jeevesagent._critique import CriticOutput, JeevesagentCritic, parse_critique
from jeeves.compat.jeevesagent._interrupt import MAX_TURNS, CompatActorCriticOutput, child_of
from jeeves.errors import MaxTurnsExceeded, UserError
from jeeves.journal.records import error_type_name

__all__ = [
    "DEFAULT_CRITIQUE_TEMPLATE",
    "DEFAULT_REFINE_TEMPLATE",
    "NO_ISSUES",
    "ActorCritic",
    "CriticOutput",
    "parse_critique",
]

DEFAULT_CRITIQUE_TEMPLATE = """\
You are reviewing the output below against the original task. Find
every issue you can: factual errors, missing requirements, edge
cases, security holes, unclear language. Be specific — cite the
section of the output you're criticizing.

Output ONLY a JSON object with this shape:

{{"issues": ["...", "..."], "score": 0.0-1.0, "summary": "..."}}

The score is your confidence the output fully solves the task:
- 1.0 = no issues, ship it
- 0.7-0.9 = mostly correct, minor gaps
- 0.4-0.6 = real problems, must revise
- 0.0-0.3 = wrong or missing core deliverable

Original task:
{prompt}

Output to review:
{output}
"""
"""jeevesagent's critique prompt: `{prompt}` and `{output}`."""

DEFAULT_REFINE_TEMPLATE = """\
Revise your previous output based on the critique below. Address
every point in the critique. Output ONLY the revised version, no
preamble or commentary about what changed.

Original task:
{prompt}

Previous output:
{output}

Critique:
{issues_bulleted}
"""
"""jeevesagent's refine prompt: `{prompt}`, `{output}`, `{critique}`, `{issues_bulleted}`."""

NO_ISSUES = "(no specific issues listed; general improvement)"
"""What `{issues_bulleted}` holds when the critique lists no issue (jeevesagent's text)."""

_parse_critique = parse_critique
"""jeevesagent's private name, for code that imported it."""

_CRITIQUE_FIELDS = ("prompt", "output")
_REFINE_FIELDS = ("prompt", "output", "critique", "issues_bulleted")
_OUT_OF_TURNS = error_type_name(MaxTurnsExceeded()) + ":"


def _checked(template: object, fields: tuple[str, ...], *, what: str) -> str:
    if not isinstance(template, str):
        raise UserError(f"{what} must be a str, got {template!r}.")
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise UserError(
            f"{what} is not a valid format string ({exc}): {template!r}. Write literal braces as {{{{ }}}}."
        ) from None
    unknown = sorted({"{" + n + "}" for n in names if n.split(".")[0].split("[")[0] not in fields})
    if unknown:
        raise UserError(
            f"{what} uses unknown placeholder(s) {', '.join(unknown)}; jeevesagent's {what} fills "
            f"{', '.join('{' + f + '}' for f in fields)}. Write a literal brace as {{{{ or }}}}."
        )
    return template


def _critique_renderer(template: str) -> PromptRenderer:
    def render(fields: PromptFields) -> str:
        return template.format(prompt=fields.task, output=fields.output)

    return render


def _refine_renderer(template: str) -> PromptRenderer:
    def render(fields: PromptFields) -> str:
        issues = fields.verdict.issues if fields.verdict else []
        return template.format(
            prompt=fields.task,
            output=fields.output,
            critique=(fields.verdict.summary if fields.verdict else "") or "",
            issues_bulleted="\n".join(f"- {issue}" for issue in issues) or NO_ISSUES,
        )

    return render


def _critic(critic: object) -> Any:
    """A critic Agent (jeevesagent's or jeeves') as jeevesagent runs it; other critics as they are."""
    if hasattr(critic, "as_jeeves"):
        critic = critic.as_jeeves()
    if not isinstance(critic, JeevesAgent):
        return critic
    if critic.tools:
        raise UserError(
            f"The critic Agent has tools {[t.name for t in critic.tools]!r}, which a jeeves critic cannot "
            f"call; give a tool-free Agent, or write a jeeves Critic whose review() runs your agent."
        )
    if critic.output_type is not None:
        raise UserError(
            f"The critic Agent has output_type={critic.output_type!r}; jeevesagent's critic replies "
            f"with text that is read as a verdict, so leave output_type unset."
        )
    return JeevesagentCritic(
        critic.instructions,
        name=critic.role if critic.role != "agent" else "llm",
        route=critic.route,
        params=critic.params,
        max_turns=getattr(critic, "turns_allowed", critic.max_turns),
    )


def _check_numbers(max_rounds: object, approval_threshold: object) -> None:
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise UserError(f"max_rounds must be an int >= 1 (jeevesagent counts reviews), got {max_rounds!r}.")
    if (
        isinstance(approval_threshold, bool)
        or not isinstance(approval_threshold, int | float)
        or not 0 <= approval_threshold <= 1
    ):
        raise UserError(f"approval_threshold must be a score in [0, 1], got {approval_threshold!r}.")


class ActorCritic(_ActorCritic):
    """jeevesagent's `ActorCritic(actor=, critic=, ...)`, built as jeeves' ActorCritic.

    Args:
        actor: The Agent (jeevesagent-style from this layer, or any jeeves architecture)
            that drafts and revises.
        critic: The reviewing Agent, or any critic jeeves' ActorCritic takes.
        max_rounds: Reviews at most (≥ 1); each but the last may be followed by a revision.
        approval_threshold: A review scoring at least this approves, in [0, 1].
        critique_template: The critic's prompt, over `{prompt}` and `{output}`.
        refine_template: The actor's revision prompt, over `{prompt}`, `{output}`,
            `{critique}` and `{issues_bulleted}`.
        role: The role routing uses when this is the root of a run (jeeves' option).
        description: What it does, for a Supervisor's model (jeeves' option).

    `run` returns a `CompatActorCriticOutput`: jeeves' ActorCriticOutput plus
    `interrupted` and `interruption_reason`.
    """

    name = "actor-critic"

    def __init__(
        self,
        *,
        actor: Any,
        critic: Any,
        max_rounds: int = 3,
        approval_threshold: float = 0.9,
        critique_template: str | None = None,
        refine_template: str | None = None,
        role: str = "actor_critic",
        description: str = "",
    ) -> None:
        _check_numbers(max_rounds, approval_threshold)
        critique = _checked(
            DEFAULT_CRITIQUE_TEMPLATE if critique_template is None else critique_template,
            _CRITIQUE_FIELDS,
            what="critique_template",
        )
        refine = _checked(
            DEFAULT_REFINE_TEMPLATE if refine_template is None else refine_template,
            _REFINE_FIELDS,
            what="refine_template",
        )
        self._declared = {"actor": actor, "critic": critic}
        converted: Any = (
            [_critic(c) for c in critic]
            if isinstance(critic, Sequence) and not isinstance(critic, str)
            else _critic(critic)
        )
        super().__init__(
            as_architecture(actor, what="actor"),
            converted,
            threshold=approval_threshold,
            max_rounds=max_rounds - 1,
            role=role,
            description=description,
        )
        self.settings = dataclasses.replace(
            self.settings,
            critic_template=_critique_renderer(critique),
            refine_template=_refine_renderer(refine),
        )

    def declared_workers(self) -> dict[str, Any]:
        """The actor and the critic as they were given (jeevesagent's method)."""
        return dict(self._declared)

    def as_jeeves(self) -> Architecture:
        """Itself: it runs as a child (a Supervisor's worker) as it is."""
        return self

    def bind(self, host: object) -> Architecture:
        """Itself: the host Agent's model and tools play no part (jeevesagent's behaviour)."""
        return self

    async def run(self, ctx: Context, task: str) -> CompatActorCriticOutput:
        loop = CriticLoop(ctx, task, self.actor, self.critic, self.settings, CompatActorCriticOutput)
        try:
            output = await loop.run()
        except MaxTurnsExceeded as exc:
            where = child_of(ctx.session_id, exc.session_id)
            if where is None or where[0] != self.settings.actor_role:
                raise
            return _interrupted(getattr(exc, "output", None), f"actor:round_{where[1]}:{MAX_TURNS}")
        if output.stop_reason == "critic_failed" and (output.critic_error or "").startswith(_OUT_OF_TURNS):
            reviewed = output.rounds[-1].round + 1  # jeevesagent numbers reviews from 1
            return _interrupted(output, f"critic:round_{reviewed}:{MAX_TURNS}")
        return output


def _interrupted(kept: object, reason: str) -> CompatActorCriticOutput:
    """`kept` (the loop's output so far, if any) marked interrupted, as jeevesagent returns it."""
    fields: dict[str, Any] = {"value": "", "text": ""}
    if isinstance(kept, CompatActorCriticOutput):
        fields = {name: getattr(kept, name) for name in CompatActorCriticOutput.model_fields}
    fields.update(stop_reason="interrupted", interrupted=True, interruption_reason=reason)
    return CompatActorCriticOutput(**fields)
