"""jeevesagent's `ActorCritic` and `CriticOutput`, running as jeeves' own ActorCritic.

Code written for jeevesagent 0.9's ActorCritic runs unchanged: the same keyword
constructor, defaults and prompt templates, rendered as jeevesagent renders them.

```python
from jeeves import Agent, run
from jeeves.compat.jeevesagent import ActorCritic

arch = ActorCritic(
    actor=Agent("You write Python.", model="anthropic/claude-sonnet-4-5"),
    critic=Agent("You review Python.", model="openai/gpt-4o"),
    max_rounds=3,
    approval_threshold=0.9,
)
result = await run(arch, "Write slugify(text).")
```

How each option maps (docs/coming-from-jeevesagent.md has the whole table):

- `max_rounds` counts reviews, as in jeevesagent: the first draft is reviewed, and each
  review below the threshold but the last is followed by a revision. jeeves' own
  `max_rounds` counts revisions, so this one is jeeves' `max_rounds - 1`.
- `approval_threshold` (default 0.9) is jeeves' `threshold` (default 0.8 there).
- `critique_template` fills `{prompt}` (the task) and `{output}` (the candidate);
  `refine_template` also `{critique}` (the verdict's summary) and `{issues_bulleted}`
  (`- issue` lines, or jeevesagent's sentence when there are none). A template is
  checked when the ActorCritic is built; any other placeholder is a UserError.
- The critic Agent becomes an `LLMCritic` whose system prompt is that Agent's
  instructions as they are: the critique template asks for the JSON reply, as in
  jeevesagent. Its model pin and params come along. Any other jeeves critic works too.

What runs is jeeves' loop, so jeeves' behaviour holds where jeevesagent's differed: an
unreadable critique is a flagged fallback that never approves (jeevesagent scored it
0.0 and went on), the best candidate is returned and revised (not the latest), and the
session ids are jeeves' (`__critic_0` reviews `__actor_0`; jeevesagent named it
`__critic_1`).

The two default templates are jeevesagent's own text (Apache-2.0), kept verbatim so
that prompts render identically.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Sequence

from jeeves.agent import Agent
from jeeves.architecture import Architecture
from jeeves.architectures._templates import PromptFields, PromptRenderer
from jeeves.architectures.actor_critic import ActorCritic as _ActorCritic
from jeeves.architectures.actor_critic import CriticLike
from jeeves.critics import LLMCritic, Verdict
from jeeves.errors import UserError

__all__ = ["DEFAULT_CRITIQUE_TEMPLATE", "DEFAULT_REFINE_TEMPLATE", "ActorCritic", "CriticOutput"]

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

_CRITIQUE_FIELDS = ("prompt", "output")
_REFINE_FIELDS = ("prompt", "output", "critique", "issues_bulleted")


class CriticOutput(Verdict):
    """jeevesagent's critic verdict (`issues`, `score`, `summary`), as a jeeves `Verdict`.

    It is a Verdict, so a function critic may return it and everything that reads
    verdicts reads it. As every Verdict it is immutable (`model_copy(update=...)` makes a
    changed one) and its score is normalised (`8` is read as 8 out of 10); `score`
    defaults to 0.0 as in jeevesagent.
    """

    score: float = 0.0


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


def _critic(critic: CriticLike) -> CriticLike:
    """A critic Agent as jeevesagent runs it: its own instructions, nothing appended."""
    if not isinstance(critic, Agent):
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
    name = critic.role if critic.role != "agent" else "llm"
    return LLMCritic(critic.instructions, name=name, model=critic.route, params=critic.params)


class ActorCritic(_ActorCritic):
    """jeevesagent's `ActorCritic(actor=, critic=, ...)`, built as jeeves' ActorCritic.

    Args:
        actor: The Agent (or any jeeves architecture) that drafts and revises.
        critic: The reviewing Agent, or any critic jeeves' ActorCritic takes.
        max_rounds: Reviews at most (≥ 1); each but the last may be followed by a revision.
        approval_threshold: A review scoring at least this approves, in [0, 1].
        critique_template: The critic's prompt, over `{prompt}` and `{output}`.
        refine_template: The actor's revision prompt, over `{prompt}`, `{output}`,
            `{critique}` and `{issues_bulleted}`.
        role: The role routing uses when this is the root of a run (jeeves' option).
        description: What it does, for a Supervisor's model (jeeves' option).
    """

    def __init__(
        self,
        *,
        actor: Architecture,
        critic: CriticLike | Sequence[CriticLike],
        max_rounds: int = 3,
        approval_threshold: float = 0.9,
        critique_template: str | None = None,
        refine_template: str | None = None,
        role: str = "actor_critic",
        description: str = "",
    ) -> None:
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
            raise UserError(
                f"max_rounds must be an int >= 1 (jeevesagent counts reviews), got {max_rounds!r}."
            )
        if (
            isinstance(approval_threshold, bool)
            or not isinstance(approval_threshold, int | float)
            or not 0 <= approval_threshold <= 1
        ):
            raise UserError(f"approval_threshold must be a score in [0, 1], got {approval_threshold!r}.")
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
        converted: CriticLike | list[CriticLike] = (
            [_critic(c) for c in critic] if isinstance(critic, Sequence) else _critic(critic)
        )
        super().__init__(
            actor,
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
