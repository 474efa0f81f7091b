"""`jeeves demo`: the whole idea offline, in under a minute, recorded so it can be replayed.

A Supervisor (`lead`) hands two pieces of work out at once: the coder, an ActorCritic
whose drafts are judged by the real pytest file below (run in a subprocess) and by a
reviewer model, and a researcher, an Agent with a tool. The coder's first draft fails a
test; the failure and the review go back to it, and its second draft passes. The lead
then answers with both. The models are scripted (no API key, no network), but each role
shows the model it stands in for, as `scripted:<model>`. The run is recorded to a
journal, and the demo ends with the `jeeves replay` command that plays it back.
"""

from __future__ import annotations

import importlib.util
import secrets
import sys
from pathlib import Path

from jeeves._run.runner import RunResult, stream
from jeeves.agent.agent import Agent
from jeeves.agent.tools import tool
from jeeves.architectures import ActorCritic, Supervisor
from jeeves.cli.invocation import command_line
from jeeves.cli.terminal import follow, spend_lines
from jeeves.critics import CodeCritic, LLMCritic
from jeeves.models.base import Route
from jeeves.models.router import Router
from jeeves.models.testing import Reply, ScriptedModel, call

__all__ = ["DEFAULT_JOURNAL", "TASK", "demo_architecture", "demo_router", "run_demo"]

DEFAULT_JOURNAL = Path(".jeeves") / "demo.jsonl"
"""Where `jeeves demo` records, relative to the current directory (git-ignored)."""

TASK = (
    "Write is_palindrome(text) for our word game: True when the text reads the same backwards, "
    "ignoring case, spaces and punctuation. Also tell me which string methods it relies on."
)

TESTS = """\
from palindrome import is_palindrome


def test_a_plain_palindrome():
    assert is_palindrome("level")


def test_ignores_case_spaces_and_punctuation():
    assert is_palindrome("A man, a plan, a canal: Panama!")


def test_rejects_other_text():
    assert not is_palindrome("jeeves")
"""

_DOCS = {
    "str.casefold": "str.casefold(): return a casefolded copy of the string. Casefolding is similar to "
    "lowercasing but more aggressive, for caseless matching ('ß'.casefold() == 'ss').",
    "str.isalnum": "str.isalnum(): return True if all characters in the string are alphanumeric and "
    "there is at least one character.",
    "reversed": "reversed(seq): return a reverse iterator over the values of the given sequence.",
}


@tool
def python_docs(name: str) -> str:
    """Look up a standard-library function by its dotted name, e.g. "str.casefold"."""
    return _DOCS.get(name, f"No entry for {name!r}; try one of: {', '.join(_DOCS)}.")


def demo_architecture() -> Supervisor:
    """The demo's architecture: a lead over an ActorCritic coder and a researcher (a factory, for replay)."""
    coder = ActorCritic(
        Agent("You write correct, simple, typed Python. Reply with the whole module in one ```python block."),
        [CodeCritic(TESTS, module="palindrome", timeout_s=60), LLMCritic(name="review")],
        max_rounds=2,
        description="Writes Python and revises it until its tests pass and a reviewer approves.",
    )
    researcher = Agent(
        "You answer questions about Python's standard library, briefly, using the python_docs tool.",
        tools=[python_docs],
        description="Looks things up in Python's standard library documentation.",
    )
    return Supervisor({"coder": coder, "researcher": researcher}, role="lead", max_delegations=4)


_FIRST_DRAFT = """\
```python
def is_palindrome(text: str) -> bool:
    return text == text[::-1]
```"""

_SECOND_DRAFT = """\
Now only letters and digits count, compared without case:

```python
def is_palindrome(text: str) -> bool:
    letters = [c.casefold() for c in text if c.isalnum()]
    return letters == letters[::-1]
```"""

_CODE = _SECOND_DRAFT.split("\n\n", 1)[1]

_ANSWER = f"""\
Here is `is_palindrome`; it passes all three tests and the reviewer approved it:

{_CODE}

It relies on `str.isalnum`, which keeps letters and digits and drops spaces and punctuation, \
and `str.casefold`, which compares without case (more thoroughly than `lower`: \
`'ß'.casefold() == 'ss'`). The first draft compared the raw text, so "A man, a plan, a canal: \
Panama!" failed."""


def _script() -> ScriptedModel:
    return ScriptedModel(
        {
            "lead": [
                Reply(
                    tool_calls=[
                        call("delegate", {"worker": "coder", "instructions": TASK.split(" Also")[0]}),
                        call(
                            "delegate",
                            {
                                "worker": "researcher",
                                "instructions": "Which string methods help ignore case and punctuation?",
                            },
                        ),
                    ]
                ),
                _ANSWER,
            ],
            "researcher": [
                Reply(
                    tool_calls=[
                        call("python_docs", {"name": "str.isalnum"}),
                        call("python_docs", {"name": "str.casefold"}),
                    ]
                ),
                "`str.isalnum` keeps letters and digits, which drops spaces and punctuation; "
                "`str.casefold` compares without case, more thoroughly than `lower`.",
            ],
            "coder.actor": [_FIRST_DRAFT, _SECOND_DRAFT],
            "coder.critic": [
                '{"score": 0.5, "issues": ["case, spaces and punctuation are not ignored"], "summary": "Close."}',
                '{"score": 0.95, "issues": [], "summary": "Correct and clear."}',
            ],
        },
        model_name="scripted",
    )


def demo_router() -> Router:
    """The demo's routes: one script standing in for three models (a fresh script per run)."""
    script = _script()
    routes = {
        "lead": "anthropic/claude-sonnet-4-5",
        "coder.actor": "anthropic/claude-sonnet-4-5",
        "coder.critic": "openai/gpt-4o",
        "default": "openai/gpt-4o-mini",
    }
    return Router({key: Route(model=f"scripted:{model}", client=script) for key, model in routes.items()})


async def run_demo(as_json: bool = False, journal: str | None = None) -> int:
    """Run the demo, shown live (or as JSON lines), recorded to `journal`."""
    out = sys.stdout
    path = Path(journal) if journal else DEFAULT_JOURNAL
    path.parent.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("pytest") is None:
        sys.stderr.write(
            "note: pytest is not installed, so the code critic cannot run its tests: pip install pytest\n"
        )
    session_id = f"demo-{secrets.token_hex(3)}"
    async with stream(
        demo_architecture(),
        TASK,
        router=demo_router(),
        session_id=session_id,
        journal=str(path),
        architecture_ref="jeeves.cli.demo:demo_architecture",
    ) as events:
        await follow(events, as_json=as_json, file=out)
        result = await events.result()
    if not as_json:  # JSON lines stay events only (and stderr stays free for --trace)
        out.write(_epilogue(result, path))
    return 0


def _critiques(result: RunResult) -> str:
    """What the coder's critics said, round by round (the tree shows only the scores)."""
    lines = []
    for delegation in getattr(result.detail, "delegations", []):
        for r in getattr(delegation.output, "rounds", []):
            verdict = "approved" if r.passed else r.critic_error or "not approved"
            score = "-" if r.score is None else f"{r.score:.2f}"
            lines.append(f"{delegation.worker}, round {r.round}: score {score}, {verdict}")
            lines += [_bullet(issue) for issue in r.issues]
    return "\n".join(lines) + "\n" if lines else ""


def _bullet(issue: str) -> str:
    """An issue in full, its later lines indented under its first (pytest's `+ where ...`)."""
    first, *rest = issue.strip().splitlines() or [""]
    return "\n".join([f"  - {first}", *(f"    {line}" for line in rest)])


def _epilogue(result: RunResult, journal: Path) -> str:
    replay = command_line("replay", str(journal), result.session_id)
    total, *per_path = spend_lines(result.usage, result.usage_by_path)
    spent = "".join(line + "\n" for line in per_path)
    return (
        f"\n{_critiques(result)}\n{result.text}\n\nstop reason: {result.stop_reason} · {total} "
        f"(scripted models: nothing was paid)\n{spent}"
        f"\nRecorded to {journal}. Replay it offline, event for event:\n  {replay}\n"
    )
