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

from jeeves.agent import Agent
from jeeves.architectures import ActorCritic, Supervisor
from jeeves.critics import CodeCritic, LLMCritic
from jeeves.models.base import Route
from jeeves.models.router import Router
from jeeves.models.testing import Reply, ScriptedModel, call
from jeeves.runner import RunResult, stream
from jeeves.terminal import follow
from jeeves.tools import tool

__all__ = ["DEFAULT_JOURNAL", "TASK", "demo_architecture", "demo_router", "run_demo"]

DEFAULT_JOURNAL = Path(".jeeves") / "demo.jsonl"
"""Where `jeeves demo` records, relative to the current directory (git-ignored)."""

TASK = "Write slugify(text) for our blog's URLs, and tell me what the standard library does for it."

TESTS = """\
from slugify import slugify


def test_lowercases_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_collapses_runs_of_separators():
    assert slugify("a  --  b") == "a-b"


def test_strips_separators_at_the_ends():
    assert slugify("  Jeeves, at your service! ") == "jeeves-at-your-service"
"""

_DOCS = {
    "re.sub": "re.sub(pattern, repl, string, count=0, flags=0): return the string obtained by replacing "
    "the leftmost non-overlapping occurrences of pattern in string by repl.",
    "str.lower": "str.lower(): return a copy of the string with all the cased characters converted to lowercase.",
    "str.strip": "str.strip([chars]): return a copy of the string with the leading and trailing characters removed.",
}


@tool
def python_docs(name: str) -> str:
    """Look up a standard-library function by its dotted name, e.g. "re.sub"."""
    return _DOCS.get(name, f"No entry for {name!r}; try one of: {', '.join(_DOCS)}.")


def demo_architecture() -> Supervisor:
    """The demo's architecture: a lead over an ActorCritic coder and a researcher (a factory, for replay)."""
    coder = ActorCritic(
        Agent("You write correct, simple, typed Python. Reply with the whole module in one ```python block."),
        [CodeCritic(TESTS, module="slugify", timeout_s=60), LLMCritic(name="review")],
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
def slugify(text: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    return out.strip("-")
```"""

_SECOND_DRAFT = """\
Runs of separators now collapse into one dash:

```python
import re


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
```"""

_ANSWER = """\
Here is `slugify`; it passes all three tests and the reviewer approved it:

```python
import re


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
```

From the standard library: `str.lower` folds the case, and `re.sub` with the pattern \
`[^a-z0-9]+` replaces each whole run of other characters with a single dash, which is what \
the first draft missed."""


def _script() -> ScriptedModel:
    return ScriptedModel(
        {
            "lead": [
                Reply(
                    tool_calls=[
                        call("delegate", {"worker": "coder", "instructions": TASK.split(",")[0] + "."}),
                        call(
                            "delegate",
                            {
                                "worker": "researcher",
                                "instructions": "Which standard-library functions help write slugify?",
                            },
                        ),
                    ]
                ),
                _ANSWER,
            ],
            "researcher": [
                Reply(tool_calls=[call("python_docs", {"name": "re.sub"})]),
                "`re.sub` replaces every match of a pattern, so `[^a-z0-9]+` turns each run of other "
                "characters into one dash; `str.lower` and `str.strip('-')` do the rest.",
            ],
            "coder.actor": [_FIRST_DRAFT, _SECOND_DRAFT],
            "coder.critic": [
                '{"score": 0.6, "issues": ["runs of separators become several dashes"], "summary": "Close."}',
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
        architecture_ref="jeeves.demo:demo_architecture",
    ) as events:
        await follow(events, as_json=as_json, file=out)
        result = await events.result()
    if not as_json:
        out.write("\n")  # the tree's last line
    if not as_json:  # JSON lines stay events only (and stderr stays free for --trace)
        out.write(_epilogue(result, path))
    return 0


def _epilogue(result: RunResult, journal: Path) -> str:
    replay = f"jeeves replay {journal} {result.session_id}"
    roles = ", ".join(f"{role} {u.model_calls}" for role, u in sorted(result.usage_by_role.items()))
    return (
        f"\n{result.text}\n\nstop reason: {result.stop_reason}; model calls by role: {roles}\n"
        f"\nRecorded to {journal}. Replay it offline, event for event:\n  {replay}\n"
    )
