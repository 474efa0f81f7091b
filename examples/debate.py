"""A debate: an architecture of your own, in one file (docs/guide/custom-architecture.md).

Two agents argue a question, for and against, for a few turns; a critic judges the
transcript in its own session, and the stronger side's closing argument is the answer.
Offline (the default) the models are scripted; `--live` sends the debaters to
`$JEEVES_MODEL` and the judge to `$JEEVES_CRITIC_MODEL` (default `openai/gpt-4o-mini`):

    python examples/debate.py
    python examples/debate.py --live
    jeeves run examples/debate.toml "Should a team adopt a monorepo?" --offline
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio

import jeeves
from jeeves import Agent, Architecture, Context, LLMCritic, Output, Router, ScriptedModel, Verdict
from jeeves.architectures import Caller, join_callers, model_callers
from jeeves.critics import Critic, Review, review_in

SIDES = ("pro", "con")

JUDGE_PROMPT = """\
## Question
{task}

## Transcript
{transcript}

## End of transcript
Judge which side argued better. Score 1.0 if the case FOR (pro) is clearly stronger, 0.0 if the
case AGAINST (con) is, values between for a close call. List each side's weak points as issues."""
"""What the judge sees: the question, every argument labelled by side, and how to score."""


class DebateOutput(Output):
    """A debate's answer (the winning side's closing argument) and how it was reached."""

    transcript: list[tuple[str, str]] = []
    """Every argument in order, as (side, text)."""
    winner: str = ""
    """"pro" or "con"."""
    verdict: Verdict | None = None
    """The judge's verdict: score >= 0.5 means pro won."""


class Debate:
    """Two architectures argue a question for `turns` rounds; a critic judges the transcript.

    Args:
        pro, con: The debaters (any architecture: an Agent, an ActorCritic...). Each runs as
            a child session per turn (`{root}__pro_0`, `{root}__con_0`, ...), under the role
            `pro` or `con`: that is the key `models=` and a ScriptedModel route it by.
        judge: A critic (an LLMCritic, or a function `(task, transcript) -> score`); it
            reviews in its own child session `{root}__judge_0`, role `judge`.
        turns: How many times each side speaks.
    """

    name = "debate"

    def __init__(
        self, pro: Architecture, con: Architecture, judge: Critic, *, turns: int = 1, role: str = "debate"
    ) -> None:
        self.pro, self.con, self.judge, self.turns, self.role = pro, con, judge, turns, role

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """The sessions it runs that call a model, by role path: what `jeeves.describe` lists and
        what `models=` keys are checked against. None (cannot say) if a part cannot say."""
        parts = (("pro", self.pro), ("con", self.con), ("judge", self.judge))
        return join_callers(model_callers(part, (*path, role), (*routed, role)) for role, part in parts)

    async def run(self, ctx: Context, task: str) -> DebateOutput:
        transcript: list[tuple[str, str]] = []
        for turn in range(self.turns):
            for side, debater in zip(SIDES, (self.pro, self.con), strict=True):
                prompt = _debater_prompt(task, side, transcript)
                said = await ctx.run(debater, prompt, role=side, index=turn)  # a child session
                transcript.append((side, said.text))
        shown = "\n\n".join(f"[{side}] {text}" for side, text in transcript)
        review = Review.of(task, shown, prompt=JUDGE_PROMPT.format(task=task, transcript=shown))
        verdict = await review_in(ctx, self.judge, review, role="judge")  # the judge's own session
        winner = "pro" if verdict.score >= 0.5 else "con"
        closing = next(text for side, text in reversed(transcript) if side == winner)
        return DebateOutput.of(
            closing, stop_reason="judged", transcript=transcript, winner=winner, verdict=verdict
        )


def _debater_prompt(task: str, side: str, transcript: list[tuple[str, str]]) -> str:
    stance = "FOR" if side == "pro" else "AGAINST"
    heard = "\n\n".join(f"[{s}] {t}" for s, t in transcript) or "(nothing yet)"
    return f"Question: {task}\n\nDebate so far:\n{heard}\n\nArgue {stance}, in at most three sentences."


def build() -> Debate:
    """The debate this example runs (and `examples/debate.toml` describes)."""
    return Debate(
        pro=Agent("You argue one side of a debate, briefly and concretely."),
        con=Agent("You argue one side of a debate, briefly and concretely."),
        judge=LLMCritic(),
    )


def offline_router() -> Router:
    script = ScriptedModel(
        {
            "pro": ["One repo means one version of everything: no diamond dependencies."],
            "con": ["One repo means one huge build: every team waits on everyone's CI."],
            "judge": [
                '{"score": 0.7, "issues": ["con ignores build caching"], "summary": "pro is stronger"}'
            ],
        }
    )
    return Router({"default": script})


def live_router() -> Router:
    model = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
    return Router({"default": model, "judge": os.environ.get("JEEVES_CRITIC_MODEL", model)})


async def main(live: bool) -> int:
    result = await jeeves.run(
        build(),
        "Should a team adopt a monorepo?",
        router=live_router() if live else offline_router(),
        session_id="debate",
    )
    debate = result.detail
    assert isinstance(debate, DebateOutput)
    for side, text in debate.transcript:
        print(f"{side}: {text}")
    assert debate.verdict is not None
    print(f"judge: {debate.verdict.score:.2f} ({debate.verdict.summary})")
    print(f"winner: {debate.winner}; answer: {result.output}")
    print(f"sessions: {', '.join(sorted(result.usage_by_session))}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
